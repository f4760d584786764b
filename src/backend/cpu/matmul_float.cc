// Float-weight kernels (F32, F16, BF16): fp32 FMA dot products, register-tiled.
//   y[i, j] = sum_k x[i, k] w[j, k]
// Tile: R rows of x x C weight rows, 8 k at a time; R * C vector accumulators, each weight
// vector (converted to fp32 once) feeds R FMAs and each x vector C FMAs.
#include <immintrin.h>

#include "backend/cpu/matmul_internal.h"
#include "common/half.h"

namespace tessera::cpu::detail {
namespace {

struct LoadF32 {
  static constexpr int kBytes = 4;
  static __m256 load8(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  static float load1(const uint8_t* p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
};
struct LoadF16 {
  static constexpr int kBytes = 2;
  static __m256 load8(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static float load1(const uint8_t* p) { return load_half(p); }
};
struct LoadBF16 {
  static constexpr int kBytes = 2;
  static __m256 load8(const uint8_t* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
  static float load1(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return bf16_to_f32(h);
  }
};

template <class L, int R, int C>
void tile(const GemmArgs& a, int64_t i0, int64_t j0) {
  const int64_t k = a.k;
  const uint8_t* w[C];
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) w[c] = reinterpret_cast<const uint8_t*>(a.w) + (j0 + c) * a.w_stride;
  const float* x[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) x[r] = a.x + (i0 + r) * k;
  __m256 acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  int64_t e = 0;
  for (; e + 8 <= k; e += 8) {
    // Small m (decode): the C contiguous rows stream from DRAM.
    if constexpr (R < 4) prefetch_ahead<8 * L::kBytes * C>(w[0] + e * L::kBytes * C);
    __m256 wv[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) wv[c] = L::load8(w[c] + e * L::kBytes);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 xv = _mm256_loadu_ps(x[r] + e);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(xv, wv[c], acc[r][c]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    float* yr = a.y + (i0 + r) * a.n + j0;
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      float s = sum8(acc[r][c]);
      for (int64_t t = e; t < k; ++t) s += x[r][t] * L::load1(w[c] + t * L::kBytes);
      yr[c] = s;
    }
  }
}

template <class L, int R>
void row_strip(const GemmArgs& a, int64_t i, int64_t j0, int64_t j1) {
  constexpr int C = R >= 4 ? 3 : 4;
  int64_t j = j0;
  for (; j + C <= j1; j += C) tile<L, R, C>(a, i, j);
  for (; j < j1; ++j) tile<L, R, 1>(a, i, j);
}

template <class L>
void gemm(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  int64_t i = i0;
  for (; i + 4 <= i1; i += 4) row_strip<L, 4>(a, i, j0, j1);
  switch (i1 - i) {
    case 3: row_strip<L, 3>(a, i, j0, j1); break;
    case 2: row_strip<L, 2>(a, i, j0, j1); break;
    case 1: row_strip<L, 1>(a, i, j0, j1); break;
    default: break;
  }
}

}  // namespace

void gemm_f32(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) { gemm<LoadF32>(a, i0, i1, j0, j1); }
void gemm_f16(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) { gemm<LoadF16>(a, i0, i1, j0, j1); }
void gemm_bf16(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) { gemm<LoadBF16>(a, i0, i1, j0, j1); }

}  // namespace tessera::cpu::detail
