// Sampling on the GPU, one thread block per row of fp32 logits [n, vocab], each row with its
// own parameters in device memory: CUDA-graph safe (no host sync, no allocation, grid = n
// blocks of 1024 threads). The CPU twin with the same semantics and random numbers is
// src/sample/token_sampler.h; the greedy-only path is greedy_sample (ops.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "sample/logit_adjustments.h"
#include "sample/sampling_row.h"

namespace tessera::cuda {

// One row's parameters (temperature, top_k, top_p, min_p, seed, offset): see sampling_row.h.
using SamplingRow = tessera::SamplingRow;

// next[r] = the token drawn from row r of logits [n, vocab] under rows[r] (device memory):
// greedy when temperature <= 0; else top-k, min-p, then top-p over what is left, and a
// Gumbel-max draw from the kept tokens with the uniforms of (seed, offset, token id).
// Equal to sample_token() up to float ulps of expf/logf/log1pf. vocab < 2^31.
void sample_rows(const float* logits, int64_t n, int64_t vocab, const SamplingRow* rows, int32_t* next,
                 cudaStream_t stream);

// Row r of logits [n, vocab]: logit[t] = adjust_logit(logit[t], a) for each adjustment a of
// adjustments[indptr[r], indptr[r + 1]) (bias, masks, penalties; logit_adjustments.h), the
// very floats process_logits computes on the host. Reads indptr on the device (graph safe).
void apply_logit_adjustments(float* logits, int64_t n, int64_t vocab, const int32_t* indptr,
                             const LogitAdjustment* adjustments, cudaStream_t stream);

// Structured outputs: in each row r of logits [n, vocab] with mask_rows[r] >= 0, every token
// whose bit is clear in bitmask row mask_rows[r] ([*, (vocab + 31) / 32] words, bit t % 32 of
// word t / 32; a grammar's allowed tokens, TokenConstraint::fill_allowed's layout) becomes
// -inf; rows with -1 are untouched. Reads mask_rows on the device (graph safe).
void apply_token_bitmask(float* logits, int64_t n, int64_t vocab, const int32_t* mask_rows, const uint32_t* bitmask,
                         cudaStream_t stream);

// Async scheduling: token_ids[pairs[2i]] = sampled[pairs[2i + 1]] for i < n, so that a step
// decodes the tokens the step before sampled without their trip through the host.
void feed_sampled_tokens(int32_t* token_ids, const int32_t* sampled, const int32_t* pairs, int64_t n,
                         cudaStream_t stream);

// Largest k top_logprobs fills; further columns get id -1 and logprob -inf.
constexpr int kMaxTopLogprobs = 32;

// The k best log-softmax entries of each row, best first (ties: lower id first):
// top_ids / top_logprobs [n, k]; and, when chosen and chosen_logprob are not null,
// chosen_logprob[r] = log_softmax(row r)[chosen[r]] (-inf for an id outside [0, vocab)).
// k may be 0 (only the chosen logprobs).
void top_logprobs(const float* logits, int64_t n, int64_t vocab, int k, const int32_t* chosen, int32_t* top_ids,
                  float* top_logprobs, float* chosen_logprob, cudaStream_t stream);

}  // namespace tessera::cuda
