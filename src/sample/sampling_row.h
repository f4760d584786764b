// One row's sampling parameters as the device sampler reads them, and the per-token math the
// GPU sampler (src/backend/cuda/sampling_rows.cu) and its CPU twin
// (src/sample/token_sampler.h) share, so both compute the same floats.
// Host and device code (C++17).
#pragma once

#include <cstdint>
#include <cstring>

#include "sample/counter_rng.h"

namespace tessera {

// One row's parameters, in device memory for the GPU sampler (32 bytes).
struct SamplingRow {
  float temperature;  // <= 0 (or NaN): greedy
  int32_t top_k;      // <= 0 or >= vocab: all
  float top_p;        // >= 1 (or NaN): all
  float min_p;        // <= 0: none
  uint64_t seed;
  uint64_t offset;    // tokens generated so far by the request
};
static_assert(sizeof(SamplingRow) == 32, "SamplingRow is copied to the device as is");

// NaN logits count as -inf, and -0 as +0 (so that equal floats have equal keys).
TESSERA_HD float sanitize_logit(float x) {
  if (x != x) return -INFINITY;
  return x == 0.0f ? 0.0f : x;
}

// Order-preserving uint32 key of a float: a < b <=> key(a) < key(b) (for non-NaN, +0 only).
TESSERA_HD uint32_t float_order_key(float x) {
  uint32_t u;
#ifdef __CUDA_ARCH__
  u = __float_as_uint(x);
#else
  std::memcpy(&u, &x, sizeof(u));
#endif
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

TESSERA_HD float float_from_order_key(uint32_t k) {
  const uint32_t u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
#endif
}

// The 64-bit sort key of token idx: larger logit first, then lower id first; unique per
// token, so "the k best" is always exactly k tokens, as the CPU sampler's partial sort.
TESSERA_HD uint64_t sampling_composite(uint32_t key, int32_t idx) {
  return (static_cast<uint64_t>(key) << 32) | static_cast<uint32_t>(~static_cast<uint32_t>(idx));
}

// (l - max) / T: the token's log-weight relative to the best token, at temperature T.
TESSERA_HD float sampling_scaled(float l, float max, float temperature) { return (l - max) / temperature; }

// Exact sampling from weights e^a by the Gumbel-max trick: the kept token with the largest
// a - log(E_i), E_i ~ Exp(1) from (seed, offset, i) (rng_key = counter_rng_key(seed, offset)).
TESSERA_HD float gumbel_score(float a, uint64_t rng_key, int64_t i) {
  return a - tessera_logf(counter_exponential(rng_key, static_cast<uint64_t>(i)));
}

// The weight e^a (a <= 0) in fixed point, units of 2^-32: top-p sums these exactly (no float
// summation order), so the GPU's choice is deterministic and the CPU twin's equal to it.
TESSERA_HD uint64_t mass_fixed(float a) { return static_cast<uint64_t>(tessera_expf(a) * 4294967296.0f); }

// The kept mass top-p needs out of total: ceil(top_p * total), in [1, total] (so at least the
// best token for any top_p, even an invalid one <= 0).
TESSERA_HD uint64_t top_p_target(float top_p, uint64_t total) {
  const double x = static_cast<double>(top_p) * static_cast<double>(total);
#ifdef __CUDA_ARCH__
  const double t = ::ceil(x);
#else
  const double t = std::ceil(x);
#endif
  if (!(t > 1.0)) return total > 0 ? 1 : 0;
  return t >= static_cast<double>(total) ? total : static_cast<uint64_t>(t);
}

}  // namespace tessera
