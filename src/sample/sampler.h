// Host-side logits math: logits processing (bias, min_tokens, penalties) and logprobs. The
// token draw itself is sample_token (token_sampler.h), the same on every backend.
#pragma once

#include <cstdint>
#include <span>

#include "tessera/outputs.h"
#include "tessera/sampling_params.h"

namespace tessera {

// out[i] = logits[i] - logsumexp(logits), computed in double for the sum.
void log_softmax(const float* logits, int64_t n, float* out);

// The k largest entries of logprobs, best first (ties: lower id first).
PositionLogprobs top_logprobs(const float* logprobs, int64_t n, int64_t k);

// Index of the largest logit, the lowest index on ties.
int32_t argmax(const float* x, int64_t n);

// Applies, in place and in this order: logit_bias; while fewer than min_tokens are out,
// EOS and stop tokens to -inf; repetition penalty over prompt and output tokens (divide
// positive logits, multiply negative ones); frequency and presence penalties over output
// tokens (- f * count - p * [count > 0]).
void process_logits(float* logits, int64_t n, const SamplingParams& p, std::span<const int32_t> prompt,
                    std::span<const int32_t> output, std::span<const int32_t> eos_token_ids);

}  // namespace tessera
