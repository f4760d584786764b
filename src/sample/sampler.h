// Token selection from logits: logits processing (bias, min_tokens, penalties), greedy,
// temperature / min-p / top-k / top-p sampling, logprobs.
#pragma once

#include <cstdint>
#include <random>
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

// One request's token picker; its random stream depends only on its seed, so a request's
// samples do not depend on what else is in the batch.
class Sampler {
 public:
  explicit Sampler(uint64_t seed) : rng_(seed) {}
  Sampler() : Sampler(std::random_device{}()) {}
  // Picks the next token from logits [n] under params (greedy when temperature == 0).
  int32_t sample(const float* logits, int64_t n, const SamplingParams& params);

 private:
  std::mt19937_64 rng_;
};

}  // namespace tessera
