// fp32 <-> GGUF block formats, one row at a time. Layouts: quant_blocks.h.
#include "backend/cpu/dequantize.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/quant_blocks.h"
#include "common/check.h"
#include "common/half.h"

namespace tessera::cpu {
namespace {

inline float h2f(Half h) { return _cvtsh_ss(h); }

// Blocks are read through memcpy copies: src may be misaligned for any wider access.
template <typename B>
inline B load_block(const void* src, int64_t i) {
  B b;
  std::memcpy(&b, static_cast<const uint8_t*>(src) + i * sizeof(B), sizeof(B));
  return b;
}

template <typename B>
inline void store_block(void* dst, int64_t i, const B& b) {
  std::memcpy(static_cast<uint8_t*>(dst) + i * sizeof(B), &b, sizeof(B));
}

inline uint32_t read_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// ---- dequantization ---------------------------------------------------------------------

// y = (nibble - 8) * d
void dequant_q4_0(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const auto b = load_block<BlockQ4_0>(src, i);
    const float d = h2f(b.d);
    for (int l = 0; l < 16; ++l) {
      y[l] = static_cast<float>((b.qs[l] & 15) - 8) * d;
      y[l + 16] = static_cast<float>((b.qs[l] >> 4) - 8) * d;
    }
  }
}

// y = nibble * d + m
void dequant_q4_1(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const auto b = load_block<BlockQ4_1>(src, i);
    const float d = h2f(b.d), m = h2f(b.m);
    for (int l = 0; l < 16; ++l) {
      y[l] = static_cast<float>(b.qs[l] & 15) * d + m;
      y[l + 16] = static_cast<float>(b.qs[l] >> 4) * d + m;
    }
  }
}

// y = ((nibble | hbit << 4) - 16) * d
void dequant_q5_0(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const auto b = load_block<BlockQ5_0>(src, i);
    const float d = h2f(b.d);
    const uint32_t qh = read_u32(b.qh);
    for (int l = 0; l < 16; ++l) {
      const int lo = (b.qs[l] & 15) | ((qh >> l) & 1) << 4;
      const int hi = (b.qs[l] >> 4) | ((qh >> (l + 16)) & 1) << 4;
      y[l] = static_cast<float>(lo - 16) * d;
      y[l + 16] = static_cast<float>(hi - 16) * d;
    }
  }
}

// y = (nibble | hbit << 4) * d + m
void dequant_q5_1(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const auto b = load_block<BlockQ5_1>(src, i);
    const float d = h2f(b.d), m = h2f(b.m);
    const uint32_t qh = read_u32(b.qh);
    for (int l = 0; l < 16; ++l) {
      const int lo = (b.qs[l] & 15) | ((qh >> l) & 1) << 4;
      const int hi = (b.qs[l] >> 4) | ((qh >> (l + 16)) & 1) << 4;
      y[l] = static_cast<float>(lo) * d + m;
      y[l + 16] = static_cast<float>(hi) * d + m;
    }
  }
}

// y = q * d
void dequant_q8_0(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const auto b = load_block<BlockQ8_0>(src, i);
    const __m256 d = _mm256_set1_ps(h2f(b.d));
    for (int l = 0; l < kQK; l += 8) {
      int64_t q8;
      std::memcpy(&q8, b.qs + l, 8);
      const __m256i q = _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(q8));
      _mm256_storeu_ps(y + l, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
    }
  }
}

// Six-bit scale and min of sub-block s (layout in quant_blocks.h).
inline void k_scale_min(const uint8_t* sc, int s, int* scale, int* min) {
  if (s < 4) {
    *scale = sc[s] & 63;
    *min = sc[s + 4] & 63;
  } else {
    *scale = (sc[s + 4] & 15) | (sc[s - 4] >> 6) << 4;
    *min = (sc[s + 4] >> 4) | (sc[s] >> 6) << 4;
  }
}

// y = d * sc[s] * q - dmin * mn[s]
void dequant_q4_k(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ4_K>(src, i);
    const float d = h2f(b.d), dmin = h2f(b.dmin);
    for (int c = 0; c < 4; ++c) {
      int sc0, m0, sc1, m1;
      k_scale_min(b.scales, 2 * c, &sc0, &m0);
      k_scale_min(b.scales, 2 * c + 1, &sc1, &m1);
      const float d0 = d * sc0, o0 = dmin * m0, d1 = d * sc1, o1 = dmin * m1;
      const uint8_t* q = b.qs + 32 * c;
      for (int l = 0; l < 32; ++l) {
        y[l] = d0 * static_cast<float>(q[l] & 15) - o0;
        y[l + 32] = d1 * static_cast<float>(q[l] >> 4) - o1;
      }
      y += 64;
    }
  }
}

void dequant_q5_k(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ5_K>(src, i);
    const float d = h2f(b.d), dmin = h2f(b.dmin);
    for (int c = 0; c < 4; ++c) {
      int sc0, m0, sc1, m1;
      k_scale_min(b.scales, 2 * c, &sc0, &m0);
      k_scale_min(b.scales, 2 * c + 1, &sc1, &m1);
      const float d0 = d * sc0, o0 = dmin * m0, d1 = d * sc1, o1 = dmin * m1;
      const uint8_t* q = b.qs + 32 * c;
      for (int l = 0; l < 32; ++l) {
        const int h0 = (b.qh[l] >> (2 * c)) & 1, h1 = (b.qh[l] >> (2 * c + 1)) & 1;
        y[l] = d0 * static_cast<float>((q[l] & 15) | h0 << 4) - o0;
        y[l + 32] = d1 * static_cast<float>((q[l] >> 4) | h1 << 4) - o1;
      }
      y += 64;
    }
  }
}

// y = d * scales[e / 16] * (q - 32)
void dequant_q6_k(const void* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ6_K>(src, i);
    const float d = h2f(b.d);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = b.ql + 64 * half;
      const uint8_t* qh = b.qh + 32 * half;
      const int8_t* sc = b.scales + 8 * half;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 15) | ((qh[l] >> 0) & 3) << 4) - 32;
        const int q2 = ((ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4) - 32;
        const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
        const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
        y[l] = d * static_cast<float>(sc[is + 0] * q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2] * q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4] * q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6] * q4);
      }
      y += 128;
    }
  }
}

// ---- quantization -----------------------------------------------------------------------

// Element of largest magnitude, with its sign.
inline float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int l = 0; l < n; ++l) {
    const float a = x[l] < 0 ? -x[l] : x[l];
    if (a > amax) {
      amax = a;
      max = x[l];
    }
  }
  return max;
}

inline int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }
inline int round_i(float v) { return static_cast<int>(__builtin_lrintf(v)); }

// Symmetric: d = max / -2^(bits-1) (the extreme maps to q = 0), q = round(x / d) + 2^(bits-1).
template <int kBits>
void quant_sym(const float* x, float* dq, uint8_t* q) {
  const float max = signed_absmax(x, kQK);
  const float d = h2f(f32_to_f16(max / -static_cast<float>(1 << (kBits - 1))));
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int l = 0; l < kQK; ++l)
    q[l] = static_cast<uint8_t>(clampi(round_i(x[l] * id) + (1 << (kBits - 1)), 0, (1 << kBits) - 1));
  *dq = d;
}

// Affine: d = (max - min) / (2^bits - 1), m = min, q = round((x - m) / d).
template <int kBits>
void quant_affine(const float* x, float* dq, float* mq, uint8_t* q) {
  float mn = x[0], mx = x[0];
  for (int l = 1; l < kQK; ++l) {
    mn = x[l] < mn ? x[l] : mn;
    mx = x[l] > mx ? x[l] : mx;
  }
  const float d = h2f(f32_to_f16((mx - mn) / ((1 << kBits) - 1)));
  const float m = h2f(f32_to_f16(mn));
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int l = 0; l < kQK; ++l)
    q[l] = static_cast<uint8_t>(clampi(round_i((x[l] - m) * id), 0, (1 << kBits) - 1));
  *dq = d;
  *mq = m;
}

inline void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int l = 0; l < 16; ++l) qs[l] = static_cast<uint8_t>((q[l] & 15) | (q[l + 16] & 15) << 4);
}

inline void pack_high_bits(const uint8_t* q, uint8_t* qh) {
  uint32_t h = 0;
  for (int l = 0; l < kQK; ++l) h |= static_cast<uint32_t>((q[l] >> 4) & 1) << l;
  std::memcpy(qh, &h, 4);
}

void quant_legacy(DType t, const float* x, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK) {
    uint8_t q[kQK];
    float d = 0, m = 0;
    switch (t) {
      case DType::kQ4_0: {
        BlockQ4_0 b;
        quant_sym<4>(x, &d, q);
        b.d = f32_to_f16(d);
        pack_nibbles(q, b.qs);
        store_block(dst, i, b);
        break;
      }
      case DType::kQ4_1: {
        BlockQ4_1 b;
        quant_affine<4>(x, &d, &m, q);
        b.d = f32_to_f16(d);
        b.m = f32_to_f16(m);
        pack_nibbles(q, b.qs);
        store_block(dst, i, b);
        break;
      }
      case DType::kQ5_0: {
        BlockQ5_0 b;
        quant_sym<5>(x, &d, q);
        b.d = f32_to_f16(d);
        pack_nibbles(q, b.qs);
        pack_high_bits(q, b.qh);
        store_block(dst, i, b);
        break;
      }
      case DType::kQ5_1: {
        BlockQ5_1 b;
        quant_affine<5>(x, &d, &m, q);
        b.d = f32_to_f16(d);
        b.m = f32_to_f16(m);
        pack_nibbles(q, b.qs);
        pack_high_bits(q, b.qh);
        store_block(dst, i, b);
        break;
      }
      case DType::kQ8_0: {
        BlockQ8_0 b;
        float amax = 0;
        for (int l = 0; l < kQK; ++l) amax = std::max(amax, x[l] < 0 ? -x[l] : x[l]);
        b.d = f32_to_f16(amax / 127.0f);
        const float dd = h2f(b.d);
        const float id = dd != 0.0f ? 1.0f / dd : 0.0f;
        for (int l = 0; l < kQK; ++l) b.qs[l] = static_cast<int8_t>(clampi(round_i(x[l] * id), -127, 127));
        store_block(dst, i, b);
        break;
      }
      default: TESSERA_CHECK(false);
    }
  }
}

// Q4_K / Q5_K: per sub-block of 32, offset o = max(0, -min x) and step = (max x + o) / qmax;
// then d = max step / 63, dmin = max o / 63 quantize them to 6 bits, and
// q = round((x + dmin * mn) / (d * sc)).
template <int kBits>
void quant_k_affine(const float* x, Half* d_out, Half* dmin_out, uint8_t* scales, uint8_t* q) {
  constexpr int kQMax = (1 << kBits) - 1;
  float step[8], off[8];
  float max_step = 0, max_off = 0;
  for (int s = 0; s < 8; ++s) {
    float mn = 0, mx = x[32 * s];
    for (int l = 0; l < 32; ++l) {
      mn = std::min(mn, x[32 * s + l]);
      mx = std::max(mx, x[32 * s + l]);
    }
    off[s] = -mn;
    step[s] = (mx - mn) / kQMax;
    max_step = std::max(max_step, step[s]);
    max_off = std::max(max_off, off[s]);
  }
  *d_out = f32_to_f16(max_step / 63.0f);
  *dmin_out = f32_to_f16(max_off / 63.0f);
  const float d = h2f(*d_out), dmin = h2f(*dmin_out);
  int sc[8], mn[8];
  for (int s = 0; s < 8; ++s) {
    sc[s] = d > 0 ? clampi(round_i(step[s] / d), 0, 63) : 0;
    mn[s] = dmin > 0 ? clampi(round_i(off[s] / dmin), 0, 63) : 0;
    // A scale rounded to 0 would zero a non-constant sub-block: keep at least 1.
    if (sc[s] == 0 && step[s] > 0) sc[s] = 1;
  }
  for (int s = 0; s < 4; ++s) {
    scales[s] = static_cast<uint8_t>((sc[s] & 63) | (sc[s + 4] >> 4) << 6);
    scales[s + 4] = static_cast<uint8_t>((mn[s] & 63) | (mn[s + 4] >> 4) << 6);
    scales[s + 8] = static_cast<uint8_t>((sc[s + 4] & 15) | (mn[s + 4] & 15) << 4);
  }
  for (int s = 0; s < 8; ++s) {
    const float ds = d * sc[s], o = dmin * mn[s];
    const float id = ds > 0 ? 1.0f / ds : 0.0f;
    for (int l = 0; l < 32; ++l) q[32 * s + l] = static_cast<uint8_t>(clampi(round_i((x[32 * s + l] + o) * id), 0, kQMax));
  }
}

void quant_q4_k(const float* x, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    BlockQ4_K b;
    uint8_t q[kQKK];
    quant_k_affine<4>(x, &b.d, &b.dmin, b.scales, q);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) b.qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | q[64 * c + 32 + l] << 4);
    store_block(dst, i, b);
  }
}

void quant_q5_k(const float* x, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    BlockQ5_K b;
    uint8_t q[kQKK];
    quant_k_affine<5>(x, &b.d, &b.dmin, b.scales, q);
    std::memset(b.qh, 0, sizeof(b.qh));
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int q0 = q[64 * c + l], q1 = q[64 * c + 32 + l];
        b.qs[32 * c + l] = static_cast<uint8_t>((q0 & 15) | (q1 & 15) << 4);
        b.qh[l] |= static_cast<uint8_t>(((q0 >> 4) & 1) << (2 * c) | ((q1 >> 4) & 1) << (2 * c + 1));
      }
    }
    store_block(dst, i, b);
  }
}

// Q6_K: per sub-block of 16, step = max / -32 (signed extreme maps to q = 0);
// d = max |step| / 127 and scales = round(step / d) in int8; q = round(x / (d * sc)) + 32.
void quant_q6_k(const float* x, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQKK) {
    BlockQ6_K b;
    float step[16];
    float amax = 0;
    for (int s = 0; s < 16; ++s) {
      step[s] = signed_absmax(x + 16 * s, 16) / -32.0f;
      amax = std::max(amax, std::abs(step[s]));
    }
    b.d = f32_to_f16(amax / 127.0f);
    const float d = h2f(b.d);
    uint8_t q[kQKK];
    for (int s = 0; s < 16; ++s) {
      const int sc = d > 0 ? clampi(round_i(step[s] / d), -127, 127) : 0;
      b.scales[s] = static_cast<int8_t>(sc);
      const float ds = d * sc;
      const float id = ds != 0 ? 1.0f / ds : 0.0f;
      for (int l = 0; l < 16; ++l) q[16 * s + l] = static_cast<uint8_t>(clampi(round_i(x[16 * s + l] * id) + 32, 0, 63));
    }
    for (int half = 0; half < 2; ++half) {
      const uint8_t* qq = q + 128 * half;
      uint8_t* ql = b.ql + 64 * half;
      uint8_t* qh = b.qh + 32 * half;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((qq[l] & 15) | (qq[l + 64] & 15) << 4);
        ql[l + 32] = static_cast<uint8_t>((qq[l + 32] & 15) | (qq[l + 96] & 15) << 4);
        qh[l] = static_cast<uint8_t>((qq[l] >> 4) | (qq[l + 32] >> 4) << 2 | (qq[l + 64] >> 4) << 4 |
                                     (qq[l + 96] >> 4) << 6);
      }
    }
    store_block(dst, i, b);
  }
}

}  // namespace

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  const DTypeInfo& info = dtype_info(t);
  TESSERA_CHECK(n % info.block_size == 0);
  const int64_t nb = n / info.block_size;
  const auto* p = static_cast<const uint8_t*>(src);
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, n * sizeof(float)); return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) {
        Half h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = h2f(h);
      }
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = bf16_to_f32(h);
      }
      return;
    case DType::kQ4_0: dequant_q4_0(src, dst, nb); return;
    case DType::kQ4_1: dequant_q4_1(src, dst, nb); return;
    case DType::kQ5_0: dequant_q5_0(src, dst, nb); return;
    case DType::kQ5_1: dequant_q5_1(src, dst, nb); return;
    case DType::kQ8_0: dequant_q8_0(src, dst, nb); return;
    case DType::kQ4_K: dequant_q4_k(src, dst, nb); return;
    case DType::kQ5_K: dequant_q5_k(src, dst, nb); return;
    case DType::kQ6_K: dequant_q6_k(src, dst, nb); return;
    case DType::kI32: break;
  }
  TESSERA_CHECK_MSG(false, "dequantize_row: unsupported dtype");
}

void quantize_row(DType t, const float* src, void* dst, int64_t n) {
  const DTypeInfo& info = dtype_info(t);
  TESSERA_CHECK(n % info.block_size == 0);
  const int64_t nb = n / info.block_size;
  auto* p = static_cast<uint8_t*>(dst);
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, n * sizeof(float)); return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) {
        const Half h = f32_to_f16(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      return;
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ8_0: quant_legacy(t, src, dst, nb); return;
    case DType::kQ4_K: quant_q4_k(src, dst, nb); return;
    case DType::kQ5_K: quant_q5_k(src, dst, nb); return;
    case DType::kQ6_K: quant_q6_k(src, dst, nb); return;
    case DType::kI32: break;
  }
  TESSERA_CHECK_MSG(false, "quantize_row: unsupported dtype");
}

}  // namespace tessera::cpu
