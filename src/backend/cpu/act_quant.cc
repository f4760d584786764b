// fp32 activations -> 8-bit blocks of 32 for the integer kernels (layout: QuantizedActs).
//   d = max|x| / 127,  q = round_even(x / d) in [-127, 127],  s = d * sum(q),
//   sum16 = sums of q over each half block, ds = (d, s) interleaved.
#include <immintrin.h>

#include "backend/cpu/matmul_internal.h"

namespace tessera::cpu::detail {

namespace {

inline int hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

}  // namespace

void quantize_acts_rows(const float* x, int64_t k, int64_t i0, int64_t i1, QuantizedActs* q) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t i = i0; i < i1; ++i) {
    const float* xr = x + i * k;
    int8_t* qs = q->qs + i * q->qs_stride;
    float* d = q->d + i * q->nb_pad;
    float* s = q->s + i * q->nb_pad;
    for (int64_t b = q->nb; b < q->nb_pad; ++b) d[b] = s[b] = 0.0f;
    int16_t* s16 = q->sum16 + i * 2 * q->nb;
    float* ds = q->ds + i * 2 * q->nb;
    for (int64_t b = 0; b < q->nb; ++b, xr += kQK, qs += kQK) {
      __m256 v0 = _mm256_loadu_ps(xr), v1 = _mm256_loadu_ps(xr + 8);
      __m256 v2 = _mm256_loadu_ps(xr + 16), v3 = _mm256_loadu_ps(xr + 24);
      __m256 amax = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign_mask, v0), _mm256_andnot_ps(sign_mask, v1)),
                                  _mm256_max_ps(_mm256_andnot_ps(sign_mask, v2), _mm256_andnot_ps(sign_mask, v3)));
      __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
      m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
      m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
      const float max = _mm_cvtss_f32(m4);
      const float db = max / 127.0f;
      const __m256 id = _mm256_set1_ps(max > 0.0f ? 127.0f / max : 0.0f);
      // cvtps rounds to nearest-even under the default MXCSR.
      const __m256i q0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, id));
      const __m256i q1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, id));
      const __m256i q2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, id));
      const __m256i q3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, id));
      const int lo = hsum_epi32(_mm256_add_epi32(q0, q1));
      const int hi = hsum_epi32(_mm256_add_epi32(q2, q3));
      // packs interleave 128-bit lanes: [q0 0-3, q1 0-3, q2 0-3, q3 0-3 | q0 4-7, ...];
      // the dword permute restores element order.
      const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), _mm256_permutevar8x32_epi32(p, perm));
      d[b] = db;
      s[b] = db * static_cast<float>(lo + hi);
      ds[2 * b] = db;
      ds[2 * b + 1] = s[b];
      s16[2 * b] = static_cast<int16_t>(lo);
      s16[2 * b + 1] = static_cast<int16_t>(hi);
    }
  }
}

void quantize_wide_acts_rows(const float* x, int64_t k, int64_t i0, int64_t i1, WideActs* q) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  for (int64_t i = i0; i < i1; ++i) {
    const float* xr = x + i * k;
    int16_t* qs = q->qs + i * k;
    float* d = q->d + i * q->nb_pad;
    float* s = q->s + i * q->nb_pad;
    for (int64_t b = q->nb; b < q->nb_pad; ++b) d[b] = s[b] = 0.0f;
    float* ds = q->ds + i * 2 * q->nb;
    for (int64_t b = 0; b < q->nb; ++b, xr += kQK, qs += kQK) {
      __m256 v[4];
      __m256 amax = _mm256_setzero_ps();
      for (int t = 0; t < 4; ++t) {
        v[t] = _mm256_loadu_ps(xr + 8 * t);
        amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_mask, v[t]));
      }
      __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
      m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
      m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
      const float max = _mm_cvtss_f32(m4);
      const float db = max / 32767.0f;
      const __m256 id = _mm256_set1_ps(max > 0.0f ? 32767.0f / max : 0.0f);
      __m256i sum = _mm256_setzero_si256();
      for (int t = 0; t < 4; t += 2) {
        const __m256i q0 = _mm256_cvtps_epi32(_mm256_mul_ps(v[t], id));  // round to nearest-even
        const __m256i q1 = _mm256_cvtps_epi32(_mm256_mul_ps(v[t + 1], id));
        sum = _mm256_add_epi32(sum, _mm256_add_epi32(q0, q1));
        // packs interleaves 128-bit lanes: [q0 0-3, q1 0-3 | q0 4-7, q1 4-7]; restore order.
        const __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(q0, q1), 0xd8);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + 8 * t), p);
      }
      d[b] = db;
      s[b] = db * static_cast<float>(hsum_epi32(sum));
      ds[2 * b] = db;
      ds[2 * b + 1] = s[b];
    }
  }
}

}  // namespace tessera::cpu::detail
