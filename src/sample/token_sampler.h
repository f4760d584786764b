// The sampler of every backend: the GPU's (cuda::sample_rows) and this host one apply the
// same selection rules to the same counter-based random numbers, so the same logits, seed
// and offset draw the same token on the CPU and on CUDA. The host computes directly
// (sort / nth_element) where the GPU uses radix select; CI checks the algorithm here.
//
// Semantics:
//   temperature <= 0: argmax, the lowest id among equal maxima (also when the best logit is
//   +-inf: nothing to sample);
//   else the candidates in order (logit desc, id asc) are cut to the first top_k, to those
//   with e^((l - max) / T) >= min_p, then to the shortest prefix of what is left holding
//   >= top_p of its mass; the token is the kept one with the largest
//   (l - max) / T - log(E_i), E_i = counter_exponential(counter_rng_key(seed, offset), i):
//   the Gumbel-max trick, an exact draw from the kept weights renormalized. A request's
//   offset is the number of tokens it has generated, so its draws do not depend on the batch.
// NaN logits count as -inf. Masses for top-p are e^a in fixed point (mass_fixed), summed
// exactly, so no float summation order decides a cut.
#pragma once

#include <cstdint>
#include <vector>

#include "sample/sampling_row.h"
#include "tessera/sampling_params.h"

namespace tessera {

struct SampleResult {
  int32_t token = 0;
  float max_logit = 0.0f;       // the row's best (sanitized) logit
  bool greedy = false;          // decided by argmax (temperature <= 0 or a non-finite best)
  std::vector<int32_t> kept;    // ids that could be drawn (kept, weight > 0), ascending; empty when greedy
};

// The token drawn from logits [vocab] under row; with list_kept, the kept set too.
SampleResult sample_token_detail(const float* logits, int64_t vocab, const SamplingRow& row, bool list_kept = true);

inline int32_t sample_token(const float* logits, int64_t vocab, const SamplingRow& row) {
  return sample_token_detail(logits, vocab, row, /*list_kept=*/false).token;
}

// The Gumbel score of token i (what the sampler maximizes over the kept set).
inline float sampling_score(float logit, float max_logit, const SamplingRow& row, int64_t i) {
  return gumbel_score(sampling_scaled(sanitize_logit(logit), max_logit, row.temperature),
                      counter_rng_key(row.seed, row.offset), i);
}

// The row for a request: its sampling parameters, its seed, and offset = tokens it has
// generated so far (top_k -1 -> 0, clamped to int32).
SamplingRow make_sampling_row(const SamplingParams& p, uint64_t seed, uint64_t offset);

}  // namespace tessera
