// Integer kernels for the 32-element ("legacy") formats Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.
//
// The 4/5-bit formats are read as unsigned codes q in [0, 2^bits) with value = q d + m
// (Q4_0: m = -8 d, Q5_0: m = -16 d); Q8_0 as signed q with m = 0. With x ~= dx qx
// (act_quant.cc), per block:
//   sum_e w[e] x[e] = d dx sum(q qx) + m dx sum(qx) = d dx dot + m s
// dot comes from vpmaddubsw (u8 x s8 -> pairs summed in i16: |q qx| <= 31 * 127 * 2 fits;
// Q8_0 feeds |q| <= 128 and qx * sign(q)) then vpmaddwd against ones (-> 8 x i32),
// converted and scaled in fp32.
//
// With 16-bit activations (WideActs, ActivationPrecision::kPrecise) the codes are widened
// to i16 and vpmaddwd multiplies them with x directly: |q qx| summed over 4 products stays
// below 2^24 (Q8_0: 4 * 128 * 32767), so the i32 sums convert to fp32 exactly.
//
// m < 4 (decode): gemv_tile reads the blocks in place, 4 weight rows at a time.
// m >= 4 (prefill): decode_chunk unpacks a chunk of weight rows once (codes as bytes,
// scales as fp32), then tile() runs a 2 x 4 register tile (x rows x weight rows) over it.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "backend/cpu/matmul_internal.h"

namespace tessera::cpu::detail {
namespace {

inline int32_t load_u32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// The fp16 at p in both halves of a 32-bit lane.
inline int32_t load_u16_twice(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return static_cast<int32_t>(v * 0x10001u);
}

// [d0 m0 d1 m1 d2 m2 d3 m3] of four blocks whose (fp16 d, fp16 m) header is at offset 0.
inline __m256 dm4_pair_header(const uint8_t* const* b) {
  __m128i h = _mm_cvtsi32_si128(load_u32(b[0]));
  h = _mm_insert_epi32(h, load_u32(b[1]), 1);
  h = _mm_insert_epi32(h, load_u32(b[2]), 2);
  h = _mm_insert_epi32(h, load_u32(b[3]), 3);
  return _mm256_cvtph_ps(h);
}
// Same for blocks with only d (at offset 0) and m = offset * d.
inline __m256 dm4_d_only(const uint8_t* const* b, float offset) {
  __m128i h = _mm_cvtsi32_si128(load_u16_twice(b[0]));
  h = _mm_insert_epi32(h, load_u16_twice(b[1]), 1);
  h = _mm_insert_epi32(h, load_u16_twice(b[2]), 2);
  h = _mm_insert_epi32(h, load_u16_twice(b[3]), 3);
  return _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_setr_ps(1, offset, 1, offset, 1, offset, 1, offset));
}

inline __m256i unpack_nibbles(const uint8_t* qs) {
  // [lo nibbles of qs[0..16) | hi nibbles] = elements 0..15 | 16..31
  const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  const __m256i sh = _mm256_srlv_epi64(v, _mm256_setr_epi64x(0, 0, 4, 4));
  return _mm256_and_si256(sh, _mm256_set1_epi8(0x0f));
}

// 0x10 in byte e where bit e of the little-endian u32 at qh is set.
inline __m256i unpack_high_bits(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  const __m256i rep = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(rep, bit), bit), _mm256_set1_epi8(0x10));
}

// Fmt::kBytes; Fmt::codes(block) -> 32 codes; Fmt::scale(block, &d, &m);
// Fmt::dm4(4 blocks) -> [d0 m0 .. d3 m3]; Fmt::prep_x(qx) once per x block, then
// Fmt::dot16(codes, qx, prep) -> i16 pair sums of q * qx.
// Wide path: Fmt::codes16(block, &c0, &c1) -> elements 0..15 and 16..31 as i16;
// Fmt::widen(16 code bytes) -> 16 x i16.
struct UnsignedCodes {
  static __m256i prep_x(__m256i xv) { return xv; }
  static __m256i dot16(__m256i q, __m256i xv, __m256i) { return _mm256_maddubs_epi16(q, xv); }
  static __m256i widen(const uint8_t* p) {
    return _mm256_cvtepu8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(p)));
  }
};
// Byte l of qs holds element l (low nibble) and l + 16 (high nibble).
inline void nibbles16(const uint8_t* qs, __m256i* c0, __m256i* c1) {
  const __m256i v = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  *c0 = _mm256_and_si256(v, _mm256_set1_epi16(0x0f));
  *c1 = _mm256_srli_epi16(v, 4);
}
template <class Fmt>
inline void split16(const uint8_t* b, __m256i* c0, __m256i* c1) {
  const __m256i v = Fmt::codes(b);
  *c0 = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(v));
  *c1 = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(v, 1));
}
struct FmtQ4_0 : UnsignedCodes {
  static constexpr int kBytes = sizeof(BlockQ4_0);
  static __m256i codes(const uint8_t* b) { return unpack_nibbles(b + 2); }
  static void codes16(const uint8_t* b, __m256i* c0, __m256i* c1) { nibbles16(b + 2, c0, c1); }
  static void scale(const uint8_t* b, float* d, float* m) {
    *d = load_half(b);
    *m = -8.0f * *d;
  }
  static __m256 dm4(const uint8_t* const* b) { return dm4_d_only(b, -8.0f); }
};
struct FmtQ4_1 : UnsignedCodes {
  static constexpr int kBytes = sizeof(BlockQ4_1);
  static __m256i codes(const uint8_t* b) { return unpack_nibbles(b + 4); }
  static void codes16(const uint8_t* b, __m256i* c0, __m256i* c1) { nibbles16(b + 4, c0, c1); }
  static void scale(const uint8_t* b, float* d, float* m) {
    *d = load_half(b);
    *m = load_half(b + 2);
  }
  static __m256 dm4(const uint8_t* const* b) { return dm4_pair_header(b); }
};
struct FmtQ5_0 : UnsignedCodes {
  static constexpr int kBytes = sizeof(BlockQ5_0);
  static __m256i codes(const uint8_t* b) { return _mm256_or_si256(unpack_nibbles(b + 6), unpack_high_bits(b + 2)); }
  static void codes16(const uint8_t* b, __m256i* c0, __m256i* c1) { split16<FmtQ5_0>(b, c0, c1); }
  static void scale(const uint8_t* b, float* d, float* m) {
    *d = load_half(b);
    *m = -16.0f * *d;
  }
  static __m256 dm4(const uint8_t* const* b) { return dm4_d_only(b, -16.0f); }
};
struct FmtQ5_1 : UnsignedCodes {
  static constexpr int kBytes = sizeof(BlockQ5_1);
  static __m256i codes(const uint8_t* b) { return _mm256_or_si256(unpack_nibbles(b + 8), unpack_high_bits(b + 4)); }
  static void codes16(const uint8_t* b, __m256i* c0, __m256i* c1) { split16<FmtQ5_1>(b, c0, c1); }
  static void scale(const uint8_t* b, float* d, float* m) {
    *d = load_half(b);
    *m = load_half(b + 2);
  }
  static __m256 dm4(const uint8_t* const* b) { return dm4_pair_header(b); }
};

struct alignas(32) Bytes32 {
  uint8_t v[32];
};
struct alignas(32) Float8 {
  float v[8];
};

// A chunk of weight rows decoded once per kernel call and reused by every x row (prefill):
//   d[jj * nb_pad + b], m[jj * nb_pad + b]: scales of row j0 + jj, zero past nb;
//   codes[jj * nb + b]: its 32 codes, one byte each, in element order.
struct Chunk {
  std::vector<float> d, m;
  std::vector<Bytes32> codes;
  int64_t nb = 0, nb_pad = 0;
};

template <class Fmt>
const Chunk& decode_chunk(const GemmArgs& a, int64_t j0, int64_t j1) {
  thread_local Chunk ch;
  const int64_t nb = a.k / kQK, nb_pad = (nb + 7) / 8 * 8;
  const size_t need = static_cast<size_t>((j1 - j0) * nb_pad);
  if (ch.d.size() < need) {
    ch.d.resize(need);
    ch.m.resize(need);
    ch.codes.resize(need);
  }
  ch.nb = nb;
  ch.nb_pad = nb_pad;
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t* w = reinterpret_cast<const uint8_t*>(a.w) + j * a.w_stride;
    float* d = ch.d.data() + (j - j0) * nb_pad;
    float* m = ch.m.data() + (j - j0) * nb_pad;
    Bytes32* q = ch.codes.data() + (j - j0) * nb;
    for (int64_t b = 0; b < nb; ++b) {
      Fmt::scale(w + b * Fmt::kBytes, d + b, m + b);
      _mm256_store_si256(reinterpret_cast<__m256i*>(q[b].v), Fmt::codes(w + b * Fmt::kBytes));
    }
    for (int64_t b = nb; b < nb_pad; ++b) d[b] = m[b] = 0.0f;
  }
  return ch;
}

// Per-thread buffer for a tile's scale products, grown on demand, 32-byte aligned.
inline float* scale_buffer(int64_t n) {
  thread_local std::vector<Float8> buf;
  if (buf.size() * 8 < static_cast<size_t>(n)) buf.resize(static_cast<size_t>(n + 7) / 8);
  return buf.data()->v;
}

struct FmtQ8_0 {
  static constexpr int kBytes = sizeof(BlockQ8_0);
  static __m256i codes(const uint8_t* b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2)); }
  static void codes16(const uint8_t* b, __m256i* c0, __m256i* c1) {
    *c0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2)));
    *c1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 18)));
  }
  static __m256i widen(const uint8_t* p) {
    return _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void scale(const uint8_t* b, float* d, float* m) {
    *d = load_half(b);
    *m = 0.0f;
  }
  static __m256 dm4(const uint8_t* const* b) { return dm4_d_only(b, 0.0f); }
  static __m256i prep_x(__m256i xv) { return xv; }
  // |q| (unsigned, so q = -128 is exact) times qx with q's sign.
  static __m256i dot16(__m256i q, __m256i xv, __m256i) {
    return _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(xv, q));
  }
};

// y[i0 + r, j0 + c] for r < R, c < C; weight row j0 + c is row jj + c of the chunk.
//   acc[r][c] (8 lanes) = sum_b cvt(dot_b) * (d_b dx_b)  +  sum_b m_b s_b (lane b % 8)
// so that the final sum of lanes is the dot product. The products d dx are formed 8 blocks
// at a time into a scale buffer, leaving 4 multiply-class ops per (x row, weight row, block):
// vpmaddubsw, vpmaddwd, vcvtdq2ps, vfmadd.
template <class X>
const X& acts(const GemmArgs& a) {
  if constexpr (std::is_same_v<X, WideActs>) {
    return *a.xw;
  } else {
    return *a.xq;
  }
}
template <class X>
inline constexpr bool kWide = std::is_same_v<X, WideActs>;

// i32 lanes summing q * qx over 32 elements, wide path: codes (c0, c1) against x at xs.
inline __m256i dot_wide(__m256i c0, __m256i c1, const int16_t* xs) {
  const __m256i x0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(xs));
  const __m256i x1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(xs + 16));
  return _mm256_add_epi32(_mm256_madd_epi16(c0, x0), _mm256_madd_epi16(c1, x1));
}

template <class Fmt, class X, int R, int C>
void tile(const GemmArgs& a, int64_t i0, int64_t j0, const Chunk& ch, int64_t jj) {
  const X& xq = acts<X>(a);
  const int64_t nb = ch.nb;
  const float* wd = ch.d.data() + jj * ch.nb_pad;
  const float* wm = ch.m.data() + jj * ch.nb_pad;
  const Bytes32* w[C];
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) w[c] = ch.codes.data() + (jj + c) * nb;
  using XCode = std::remove_cvref_t<decltype(*xq.row_qs(0))>;  // int8_t or int16_t
  const XCode* xs[R];
  const float* xd[R];
  const float* xsum[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    xs[r] = xq.row_qs(i0 + r);
    xd[r] = xq.row_d(i0 + r);
    xsum[r] = xq.row_s(i0 + r);
  }
  const __m256i ones = _mm256_set1_epi16(1);
  // sc[(r * C + c) * nb_pad + b] = d[c][b] dx[r][b]; offset terms 8 blocks per vector.
  // Scales are zero past nb (both sides), so whole vectors need no tail.
  const int64_t nb_pad = xq.nb_pad;
  float* sc = scale_buffer(R * C * nb_pad);
  __m256 acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      float* out = sc + (r * C + c) * nb_pad;
      __m256 v = _mm256_setzero_ps();
      for (int64_t b = 0; b < nb_pad; b += 8) {
        _mm256_store_ps(out + b, _mm256_mul_ps(_mm256_loadu_ps(wd + c * nb_pad + b), _mm256_loadu_ps(xd[r] + b)));
        v = _mm256_fmadd_ps(_mm256_loadu_ps(wm + c * nb_pad + b), _mm256_loadu_ps(xsum[r] + b), v);
      }
      acc[r][c] = v;
    }
  }

  for (int64_t b = 0; b < nb; ++b) {
    if constexpr (kWide<X>) {
      // Code pairs widened once per weight row, dotted with each x row (x from L1).
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) {
        const __m256i c0 = Fmt::widen(w[c][b].v), c1 = Fmt::widen(w[c][b].v + 16);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256i dot = dot_wide(c0, c1, xs[r] + b * kQK);
          acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_broadcast_ss(sc + (r * C + c) * nb_pad + b), acc[r][c]);
        }
      }
      continue;
    }
    __m256i wq[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) wq[c] = _mm256_load_si256(reinterpret_cast<const __m256i*>(w[c][b].v));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(xs[r] + b * kQK));
      const __m256i xp = Fmt::prep_x(xv);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) {
        const __m256i dot = _mm256_madd_epi16(Fmt::dot16(wq[c], xv, xp), ones);
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_broadcast_ss(sc + (r * C + c) * nb_pad + b), acc[r][c]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    float* yr = a.y + (i0 + r) * a.n + j0;
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) yr[c] = sum8(acc[r][c]);
  }
}

// Register tile of the prefill path: 2 x rows x 4 weight rows (8 accumulators, 4 code
// vectors); 4 x 2 and 3 x 3 measure the same on Zen 3, 2 x 4 is best on Golden Cove.
constexpr int kTileR = 2, kTileC = 4;

template <class Fmt, class X, int R>
void row_strip(const GemmArgs& a, int64_t i, int64_t j0, int64_t j1, const Chunk& ch) {
  constexpr int C = kTileC;
  int64_t j = j0;
  for (; j + C <= j1; j += C) tile<Fmt, X, R, C>(a, i, j, ch, j - j0);
  for (; j < j1; ++j) tile<Fmt, X, R, 1>(a, i, j, ch, j - j0);
}

// Decode-sized m (< 4): no per-chunk scale pass. For block b and weight rows c < 4:
//   prod = [d_c dx, m_c s] (c = 0..3, interleaved) = dm4 * [dx s dx s ...]
// the d_c dx lanes are broadcast into the FMAs, the m_c s lanes accumulate in macc and
// land in y at the end (lane 2c + 1).
template <class Fmt, class X, int R, int C>
void gemv_tile(const GemmArgs& a, int64_t i0, int64_t j0) {
  const X& xq = acts<X>(a);
  const int64_t nb = xq.nb;
  const uint8_t* w[4];
  for (int c = 0; c < 4; ++c) w[c] = reinterpret_cast<const uint8_t*>(a.w) + (j0 + std::min(c, C - 1)) * a.w_stride;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[R][C], macc[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    macc[r] = _mm256_setzero_ps();
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk[4] = {w[0] + b * Fmt::kBytes, w[1] + b * Fmt::kBytes, w[2] + b * Fmt::kBytes,
                             w[3] + b * Fmt::kBytes};
    // The 4 rows are contiguous: prefetch the stream they advance through (4 blocks a step).
    prefetch_ahead<4 * Fmt::kBytes>(w[0] + b * 4 * Fmt::kBytes);
    const __m256 dm = Fmt::dm4(blk);
    if constexpr (kWide<X>) {
      __m256 prod[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        double xds;
        std::memcpy(&xds, xq.row_ds(i0 + r) + 2 * b, 8);
        prod[r] = _mm256_mul_ps(dm, _mm256_castpd_ps(_mm256_set1_pd(xds)));
        macc[r] = _mm256_add_ps(macc[r], prod[r]);
      }
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) {
        __m256i c0, c1;
        Fmt::codes16(blk[c], &c0, &c1);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256i dot = dot_wide(c0, c1, xq.row_qs(i0 + r) + b * kQK);
          const __m256 scale = _mm256_permutevar8x32_ps(prod[r], _mm256_set1_epi32(2 * c));
          acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), scale, acc[r][c]);
        }
      }
      continue;
    }
    __m256i wq[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) wq[c] = Fmt::codes(blk[c]);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(xq.row_qs(i0 + r) + b * kQK));
      const __m256i xp = Fmt::prep_x(xv);
      double xds;
      std::memcpy(&xds, xq.row_ds(i0 + r) + 2 * b, 8);
      const __m256 prod = _mm256_mul_ps(dm, _mm256_castpd_ps(_mm256_set1_pd(xds)));
      macc[r] = _mm256_add_ps(macc[r], prod);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) {
        const __m256i dot = _mm256_madd_epi16(Fmt::dot16(wq[c], xv, xp), ones);
        const __m256 scale = _mm256_permutevar8x32_ps(prod, _mm256_set1_epi32(2 * c));
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), scale, acc[r][c]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    alignas(32) float mlanes[8];
    _mm256_store_ps(mlanes, macc[r]);
    float* yr = a.y + (i0 + r) * a.n + j0;
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) yr[c] = sum8(acc[r][c]) + mlanes[2 * c + 1];
  }
}

template <class Fmt, class X, int R>
void gemv_rows(const GemmArgs& a, int64_t i, int64_t j0, int64_t j1) {
  int64_t j = j0;
  for (; j + 4 <= j1; j += 4) gemv_tile<Fmt, X, R, 4>(a, i, j);
  switch (j1 - j) {
    case 3: gemv_tile<Fmt, X, R, 3>(a, i, j); break;
    case 2: gemv_tile<Fmt, X, R, 2>(a, i, j); break;
    case 1: gemv_tile<Fmt, X, R, 1>(a, i, j); break;
    default: break;
  }
}

template <class Fmt, class X>
void gemm_acts(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  // The kernel family depends on the whole call's m only, so every output element is
  // computed the same way whatever the thread split.
  if (a.m < 4) {
    switch (i1 - i0) {
      case 3: gemv_rows<Fmt, X, 3>(a, i0, j0, j1); return;
      case 2: gemv_rows<Fmt, X, 2>(a, i0, j0, j1); return;
      case 1: gemv_rows<Fmt, X, 1>(a, i0, j0, j1); return;
      default: return;
    }
  }
  const Chunk& ch = decode_chunk<Fmt>(a, j0, j1);
  int64_t i = i0;
  for (; i + kTileR <= i1; i += kTileR) row_strip<Fmt, X, kTileR>(a, i, j0, j1, ch);
  static_assert(kTileR == 2, "remainder rows below assume a tile of 2 rows");
  if (i < i1) row_strip<Fmt, X, 1>(a, i, j0, j1, ch);
}

template <class Fmt>
void gemm(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  if (a.xw != nullptr) {
    gemm_acts<Fmt, WideActs>(a, i0, i1, j0, j1);
  } else {
    gemm_acts<Fmt, QuantizedActs>(a, i0, i1, j0, j1);
  }
}

}  // namespace

bool has_wide_kernel(DType t) {
  return t == DType::kQ4_0 || t == DType::kQ4_1 || t == DType::kQ5_0 || t == DType::kQ5_1 || t == DType::kQ8_0;
}

void gemm_q4_0(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) { gemm<FmtQ4_0>(a, i0, i1, j0, j1); }
void gemm_q4_1(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) { gemm<FmtQ4_1>(a, i0, i1, j0, j1); }
void gemm_q5_0(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) { gemm<FmtQ5_0>(a, i0, i1, j0, j1); }
void gemm_q5_1(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) { gemm<FmtQ5_1>(a, i0, i1, j0, j1); }
void gemm_q8_0(const GemmArgs& a, int64_t i0, int64_t i1, int64_t j0, int64_t j1) { gemm<FmtQ8_0>(a, i0, i1, j0, j1); }

}  // namespace tessera::cpu::detail
