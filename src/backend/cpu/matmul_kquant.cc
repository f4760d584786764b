// Integer kernels for the K-quant super-blocks (256 elements): Q4_K, Q5_K, Q6_K.
// x is quantized in blocks of 32 (one scale dx_b each), so a super-block meets 8 x blocks.
//
// Q4_K / Q5_K, sub-block s = x block b (32 elements), codes q >= 0:
//   sum w x = d sc_s dx_b sum(q qx) - dmin mn_s s_b
// Q6_K, x block t covers 6-bit sub-blocks 2t, 2t + 1 (16 elements each), codes q in [0, 64):
//   sum w x = d dx_t [sum_h sc_h sum_h(q qx) - 32 sum_h sc_h sum16_h(qx)],  h in {2t, 2t + 1}
// The per-sub-block scales multiply the i32 lanes of the integer dot products; offset terms
// are computed for all 8 blocks of a super-block at once (lane = block) and folded into the
// same accumulator, whose lanes are summed at the end.
#include <immintrin.h>

#include <cstddef>
#include <type_traits>

#include "backend/cpu/matmul_internal.h"

namespace tessera::cpu::detail {
namespace {

// 8 six-bit scales and 8 mins of a Q4_K/Q5_K super-block (layout in quant_blocks.h), as
// bytes: out[0..8) = scales, out[8..16) = mins.
inline void unpack_k_scales(const uint8_t* packed, uint8_t* out) {
  uint32_t a, b, c;  // packed bytes 0-3, 4-7, 8-11
  std::memcpy(&a, packed, 4);
  std::memcpy(&b, packed + 4, 4);
  std::memcpy(&c, packed + 8, 4);
  const uint32_t lo6 = 0x3f3f3f3f, lo4 = 0x0f0f0f0f, lo2 = 0x03030303;
  const uint32_t sc_lo = a & lo6;                              // scales 0-3
  const uint32_t sc_hi = (c & lo4) | ((a >> 6) & lo2) << 4;    // scales 4-7
  const uint32_t mn_lo = b & lo6;                              // mins 0-3
  const uint32_t mn_hi = ((c >> 4) & lo4) | ((b >> 6) & lo2) << 4;  // mins 4-7
  std::memcpy(out, &sc_lo, 4);
  std::memcpy(out + 4, &sc_hi, 4);
  std::memcpy(out + 8, &mn_lo, 4);
  std::memcpy(out + 12, &mn_hi, 4);
}

inline __m256 u8x8_to_ps(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(v)));
}

inline __m256i load256(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// Q4_K (kBits = 4) and Q5_K (kBits = 5): y[i0 + r, j] for r < R.
template <int kBits, int R>
void tile_q45k(const GemmArgs& a, int64_t i0, int64_t j) {
  using Block = std::conditional_t<kBits == 4, BlockQ4_K, BlockQ5_K>;
  const QuantizedActs& xq = *a.xq;
  const int64_t nsb = a.k / kQKK;
  const uint8_t* w = reinterpret_cast<const uint8_t*>(a.w) + j * a.w_stride;
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  __m256 acc[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  alignas(32) float scale[R][8];

  for (int64_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* blk = w + sb * sizeof(Block);
    if constexpr (R < 4) prefetch_ahead<sizeof(Block)>(blk);
    const float d = load_half(blk + offsetof(Block, d));
    const float dmin = load_half(blk + offsetof(Block, dmin));
    uint8_t sm[16];
    unpack_k_scales(blk + offsetof(Block, scales), sm);
    const __m256 dsc = _mm256_mul_ps(_mm256_set1_ps(d), u8x8_to_ps(sm));       // d sc_s
    const __m256 dmn = _mm256_mul_ps(_mm256_set1_ps(dmin), u8x8_to_ps(sm + 8));  // dmin mn_s
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float* dx = xq.row_d(i0 + r) + 8 * sb;
      const float* sx = xq.row_s(i0 + r) + 8 * sb;
      _mm256_store_ps(scale[r], _mm256_mul_ps(dsc, _mm256_loadu_ps(dx)));
      acc[r] = _mm256_fnmadd_ps(dmn, _mm256_loadu_ps(sx), acc[r]);  // - dmin mn_s s_b, lane = s
    }
    const uint8_t* qs = blk + offsetof(Block, qs);
    __m256i qh = _mm256_setzero_si256();
    if constexpr (kBits == 5) qh = load256(blk + offsetof(BlockQ5_K, qh));
#pragma GCC unroll 8
    for (int c = 0; c < 4; ++c) {
      const __m256i raw = load256(qs + 32 * c);
      __m256i q[2] = {_mm256_and_si256(raw, low4), _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4)};
      if constexpr (kBits == 5) {
        // bit s of qh[l] -> bit 4 of code l of sub-block s = 2c + h
        const __m256i h0 = _mm256_and_si256(qh, _mm256_set1_epi8(static_cast<char>(1 << (2 * c))));
        const __m256i h1 = _mm256_and_si256(qh, _mm256_set1_epi8(static_cast<char>(2 << (2 * c))));
        q[0] = _mm256_or_si256(q[0], _mm256_andnot_si256(_mm256_cmpeq_epi8(h0, _mm256_setzero_si256()), _mm256_set1_epi8(0x10)));
        q[1] = _mm256_or_si256(q[1], _mm256_andnot_si256(_mm256_cmpeq_epi8(h1, _mm256_setzero_si256()), _mm256_set1_epi8(0x10)));
      }
#pragma GCC unroll 8
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * c + h;
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const int8_t* xs = xq.row_qs(i0 + r) + (8 * sb + s) * kQK;
          const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(xs));
          const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(q[h], xv), ones);
          acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_broadcast_ss(&scale[r][s]), acc[r]);
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) a.y[(i0 + r) * a.n + j] = sum8(acc[r]);
}

// Q6_K: y[i0 + r, j] for r < R.
template <int R>
void tile_q6k(const GemmArgs& a, int64_t i0, int64_t j) {
  const QuantizedActs& xq = *a.xq;
  const int64_t nsb = a.k / kQKK;
  const uint8_t* w = reinterpret_cast<const uint8_t*>(a.w) + j * a.w_stride;
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i low2 = _mm256_set1_epi8(0x03);
  __m256 acc[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  alignas(32) float scale[R][8];

  for (int64_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* blk = w + sb * sizeof(BlockQ6_K);
    if constexpr (R < 4) prefetch_ahead<sizeof(BlockQ6_K)>(blk);
    const float d = load_half(blk + offsetof(BlockQ6_K, d));
    const int8_t* sc = reinterpret_cast<const int8_t*>(blk + offsetof(BlockQ6_K, scales));
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 dx = _mm256_loadu_ps(xq.row_d(i0 + r) + 8 * sb);
      const __m256 ddx = _mm256_mul_ps(_mm256_set1_ps(d), dx);
      _mm256_store_ps(scale[r], ddx);
      // offsets of the 8 x blocks: sc_2t sum16_2t + sc_2t+1 sum16_2t+1 (lane t)
      const __m256i s16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq.row_sum16(i0 + r) + 16 * sb));
      const __m256 off = _mm256_cvtepi32_ps(_mm256_madd_epi16(sc16, s16));
      acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(off, _mm256_set1_ps(-32.0f)), ddx, acc[r]);
    }
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = blk + offsetof(BlockQ6_K, ql) + 64 * half;
      const __m256i ql0 = load256(ql), ql1 = load256(ql + 32);
      const __m256i qh = load256(blk + offsetof(BlockQ6_K, qh) + 32 * half);
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_slli_epi16(_mm256_and_si256(qh, low2), 4)),
          _mm256_or_si256(_mm256_and_si256(ql1, low4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), low2), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), low2), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), low2), 4)),
      };
#pragma GCC unroll 8
      for (int u = 0; u < 4; ++u) {
        const int t = 4 * half + u;  // x block within the super-block
        const __m256i scv = _mm256_setr_m128i(_mm_set1_epi16(sc[2 * t]), _mm_set1_epi16(sc[2 * t + 1]));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const int8_t* xs = xq.row_qs(i0 + r) + (8 * sb + t) * kQK;
          const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(xs));
          const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(q[u], xv), scv);
          acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_broadcast_ss(&scale[r][t]), acc[r]);
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) a.y[(i0 + r) * a.n + j] = sum8(acc[r]);
}

template <class Tile4, class Tile3, class Tile2, class Tile1>
void gemm_rows(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1, Tile4 t4, Tile3 t3, Tile2 t2,
               Tile1 t1) {
  int64_t i = i0;
  for (; i + 4 <= i1; i += 4)
    for (int64_t j = j0; j < j1; ++j) t4(a, i, j);
  for (int64_t j = j0; j < j1; ++j) {
    switch (i1 - i) {
      case 3: t3(a, i, j); break;
      case 2: t2(a, i, j); break;
      case 1: t1(a, i, j); break;
      default: break;
    }
  }
}

}  // namespace

void gemm_q4_k(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  gemm_rows(a, i0, i1, j0, j1, tile_q45k<4, 4>, tile_q45k<4, 3>, tile_q45k<4, 2>, tile_q45k<4, 1>);
}
void gemm_q5_k(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  gemm_rows(a, i0, i1, j0, j1, tile_q45k<5, 4>, tile_q45k<5, 3>, tile_q45k<5, 2>, tile_q45k<5, 1>);
}
void gemm_q6_k(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  gemm_rows(a, i0, i1, j0, j1, tile_q6k<4>, tile_q6k<3>, tile_q6k<2>, tile_q6k<1>);
}

}  // namespace tessera::cpu::detail
