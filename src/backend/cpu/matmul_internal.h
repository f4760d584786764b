// Kernel interface shared by the matmul dispatcher (matmul.cc) and the per-format kernels.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/quant_blocks.h"
#include "backend/cpu/simd.h"
#include "tensor/dtype.h"

namespace tessera::cpu::detail {

// One matmul call: y[i, j] = sum_k x[i, k] w[j, k].
struct GemmArgs {
  const float* x = nullptr;      // [m, k] fp32 (float kernels)
  const QuantizedActs* xq = nullptr;  // x quantized to 8 bits (integer kernels)
  const WideActs* xw = nullptr;       // or to 16 bits (32-element formats, when set)
  int64_t m = 0;
  int64_t k = 0;
  const std::byte* w = nullptr;  // [n, k] in its stored format
  int64_t w_stride = 0;          // bytes between weight rows
  float* y = nullptr;            // [m, n]
  int64_t n = 0;
};

// Computes the output block rows [i0, i1) x columns [j0, j1).
using TileFn = void (*)(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

// Per-format kernels (matmul_float.cc, matmul_legacy.cc, matmul_kquant.cc). Each computes
// the same per-element instruction sequence whatever the block it is given, so results do
// not depend on the thread split.
void gemm_f32(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void gemm_f16(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void gemm_bf16(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void gemm_q4_0(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void gemm_q4_1(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void gemm_q5_0(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void gemm_q5_1(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void gemm_q8_0(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void gemm_q4_k(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void gemm_q5_k(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void gemm_q6_k(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

// Quantizes rows [i0, i1) of x [m, k] into q (layout in quant_blocks.h); k % 32 == 0.
void quantize_acts_rows(const float* x, int64_t k, int64_t i0, int64_t i1, QuantizedActs* q);
void quantize_wide_acts_rows(const float* x, int64_t k, int64_t i0, int64_t i1, WideActs* q);

// True where the format's kernel reads WideActs (GemmArgs::xw): Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.
bool has_wide_kernel(DType t);

// ---- small AVX2 helpers ----------------------------------------------------------------

inline float sum8(__m256 v) { return hsum(v); }

// Horizontal sums of four vectors: {sum(a), sum(b), sum(c), sum(d)}.
inline __m128 sum8x4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 ab = _mm256_hadd_ps(a, b);  // a01 a23 b01 b23 | a45 a67 b45 b67
  const __m256 cd = _mm256_hadd_ps(c, d);
  const __m256 abcd = _mm256_hadd_ps(ab, cd);  // a b c d (low half) | a b c d (high half)
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

// Decode streams weights from DRAM; the hardware prefetcher alone leaves single-thread GEMV
// well short of the bandwidth (docs/benchmarks.md, "Matmul kernels"). Prefetch the
// kStepBytes consumed per step, kPrefetchDistance bytes ahead of the stream position p.
inline constexpr int kPrefetchDistance = 2048;
template <int kStepBytes>
inline void prefetch_ahead(const void* p) {
  const char* q = static_cast<const char*>(p) + kPrefetchDistance;
#pragma GCC unroll 8
  for (int off = 0; off < kStepBytes; off += 64) _mm_prefetch(q + off, _MM_HINT_T0);
}

inline float load_half(const void* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

}  // namespace tessera::cpu::detail
