// Token selection from logits: greedy, temperature / top-k / top-p sampling, logprobs.
#pragma once

#include <cstdint>
#include <random>

#include "tessera/outputs.h"
#include "tessera/sampling_params.h"

namespace tessera {

// out[i] = logits[i] - logsumexp(logits), computed in double for the sum.
void log_softmax(const float* logits, int64_t n, float* out);

// The k largest entries of logprobs, best first (ties: lower id first).
PositionLogprobs top_logprobs(const float* logprobs, int64_t n, int64_t k);

// Index of the largest logit, the lowest index on ties.
int32_t argmax(const float* x, int64_t n);

class Sampler {
 public:
  explicit Sampler(uint64_t seed) : rng_(seed) {}
  // Picks the next token from logits [n] under params (greedy when temperature == 0).
  int32_t sample(const float* logits, int64_t n, const SamplingParams& params);

 private:
  std::mt19937_64 rng_;
};

}  // namespace tessera
