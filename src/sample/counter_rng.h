// A counter-based random generator with no state: the uniform for token i of a sampling
// step is a pure function of (seed, offset, i), so the GPU sampler (one thread per token)
// and its CPU twin draw the very same numbers. splitmix64's output function over the counter
// key(seed, offset) + (i + 1) * golden gamma (the splitmix64 stream starting at the key;
// passes BigCrush). Host and device code (C++17, no library beyond <cmath>).
#pragma once

#include <cmath>
#include <cstdint>

#ifndef TESSERA_HD
#ifdef __CUDACC__
#define TESSERA_HD __host__ __device__ __forceinline__
#else
#define TESSERA_HD inline
#endif
#endif

namespace tessera {

constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

TESSERA_HD uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The stream key of one (seed, offset): a bijection of offset for a given seed, well mixed.
TESSERA_HD uint64_t counter_rng_key(uint64_t seed, uint64_t offset) {
  return splitmix64_mix(splitmix64_mix(seed ^ 0x6A09E667F3BCC909ull) ^ (offset * kGoldenGamma + 0x3C6EF372FE94F82Bull));
}

// 64 random bits for counter i under key.
TESSERA_HD uint64_t counter_rng_bits(uint64_t key, uint64_t i) { return splitmix64_mix(key + (i + 1) * kGoldenGamma); }

// A uniform float in (0, 1), never 0 or 1: the high 32 bits k as (k + 1/2) * 2^-32 rounded to
// float (so resolution 2^-33 near 0), clamped below 1.
TESSERA_HD float counter_uniform(uint64_t key, uint64_t i) {
  const uint32_t k = static_cast<uint32_t>(counter_rng_bits(key, i) >> 32);
  const float u = static_cast<float>(k) * 0x1p-32f + 0x1p-33f;  // the product is exact: contraction-safe
  return u < 1.0f ? u : 0x1.fffffep-1f;
}

TESSERA_HD float tessera_logf(float x) {
#ifdef __CUDA_ARCH__
  return ::logf(x);
#else
  return std::log(x);
#endif
}

TESSERA_HD float tessera_log1pf(float x) {
#ifdef __CUDA_ARCH__
  return ::log1pf(x);
#else
  return std::log1p(x);
#endif
}

TESSERA_HD float tessera_expf(float x) {
#ifdef __CUDA_ARCH__
  return ::expf(x);
#else
  return std::exp(x);
#endif
}

// Smallest exponential variate counter_exponential returns; -log of it bounds the Gumbel noise.
constexpr float kMinExponential = 0x1p-34f;
// An upper bound on -log(counter_exponential(...)) (= 34 ln 2 = 23.57, rounded up).
constexpr float kMaxGumbelNoise = 24.0f;

// An Exp(1) variate, E = -log(1 - u): small E (the winners of an exponential race) come
// from u near 0, where the float has its full resolution.
TESSERA_HD float counter_exponential(uint64_t key, uint64_t i) {
  const float e = -tessera_log1pf(-counter_uniform(key, i));
  return e > kMinExponential ? e : kMinExponential;
}

}  // namespace tessera
