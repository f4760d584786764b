// Block layouts of GGUF's quantized types (byte-identical to ggml-common.h) and the CPU
// backend's internal 8-bit activation format.
//
// Every struct is packed to its on-disk size with 2-byte fields only, so alignof is at most
// 2: rows in a GGUF file may start at any even (for odd types: any) address. Kernels read
// them with unaligned loads or memcpy, never by casting to wider types.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace tessera::cpu {

inline constexpr int kQK = 32;    // elements per block of the legacy types
inline constexpr int kQKK = 256;  // elements per K-quant super-block

// fp16 bits as stored in the file.
using Half = uint16_t;

// value[e] = (nibble[e] - 8) * d; qs[l] low nibble = element l, high = element l + 16.
struct BlockQ4_0 {
  Half d;
  uint8_t qs[kQK / 2];
};

// value[e] = nibble[e] * d + m; nibbles as Q4_0.
struct BlockQ4_1 {
  Half d;
  Half m;
  uint8_t qs[kQK / 2];
};

// value[e] = (q[e] - 16) * d, q = nibble | (bit e of little-endian u32 qh) << 4.
struct BlockQ5_0 {
  Half d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// value[e] = q[e] * d + m, q as Q5_0.
struct BlockQ5_1 {
  Half d;
  Half m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// value[e] = qs[e] * d.
struct BlockQ8_0 {
  Half d;
  int8_t qs[kQK];
};

// 256 values in 8 sub-blocks of 32: value = d * sc[s] * q - dmin * mn[s], q 4-bit.
// scales[12] packs 8 six-bit scales sc and 8 six-bit mins mn:
//   s < 4:  sc = scales[s] & 63,  mn = scales[s + 4] & 63
//   s >= 4: sc = (scales[s + 4] & 15) | (scales[s - 4] >> 6) << 4
//           mn = (scales[s + 4] >> 4) | (scales[s] >> 6) << 4
// qs: 4 chunks of 32 bytes; chunk c holds sub-block 2c in low nibbles, 2c + 1 in high ones.
struct BlockQ4_K {
  Half d;
  Half dmin;
  uint8_t scales[12];
  uint8_t qs[kQKK / 2];
};

// As Q4_K with a fifth bit: element 32 * s + l takes bit s of qh[l] as bit 4 of q.
struct BlockQ5_K {
  Half d;
  Half dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};

// 256 values in 16 sub-blocks of 16: value = d * scales[e / 16] * (q - 32), q 6-bit.
// Two halves of 128 (ql += 64, qh += 32 per half); within a half, for l < 32:
//   q[l]      = (ql[l]      & 15) | ((qh[l] >> 0) & 3) << 4
//   q[l + 32] = (ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4
//   q[l + 64] = (ql[l]      >> 4) | ((qh[l] >> 4) & 3) << 4
//   q[l + 96] = (ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  Half d;
};

static_assert(sizeof(BlockQ4_0) == 18 && alignof(BlockQ4_0) <= 2);
static_assert(sizeof(BlockQ4_1) == 20 && alignof(BlockQ4_1) <= 2);
static_assert(sizeof(BlockQ5_0) == 22 && alignof(BlockQ5_0) <= 2);
static_assert(sizeof(BlockQ5_1) == 24 && alignof(BlockQ5_1) <= 2);
static_assert(sizeof(BlockQ8_0) == 34 && alignof(BlockQ8_0) <= 2);
static_assert(sizeof(BlockQ4_K) == 144 && alignof(BlockQ4_K) <= 2);
static_assert(sizeof(BlockQ5_K) == 176 && alignof(BlockQ5_K) <= 2);
static_assert(sizeof(BlockQ6_K) == 210 && alignof(BlockQ6_K) <= 2);

// Block type of a quantized DType, with its size checked against dtype_info at compile
// time (the table in dtype.cc is runtime data, so the test suite re-checks it too).
template <DType T> struct BlockOf;
template <> struct BlockOf<DType::kQ4_0> { using type = BlockQ4_0; static constexpr int kSize = kQK; };
template <> struct BlockOf<DType::kQ4_1> { using type = BlockQ4_1; static constexpr int kSize = kQK; };
template <> struct BlockOf<DType::kQ5_0> { using type = BlockQ5_0; static constexpr int kSize = kQK; };
template <> struct BlockOf<DType::kQ5_1> { using type = BlockQ5_1; static constexpr int kSize = kQK; };
template <> struct BlockOf<DType::kQ8_0> { using type = BlockQ8_0; static constexpr int kSize = kQK; };
template <> struct BlockOf<DType::kQ4_K> { using type = BlockQ4_K; static constexpr int kSize = kQKK; };
template <> struct BlockOf<DType::kQ5_K> { using type = BlockQ5_K; static constexpr int kSize = kQKK; };
template <> struct BlockOf<DType::kQ6_K> { using type = BlockQ6_K; static constexpr int kSize = kQKK; };

// Activations quantized for the integer kernels, structure-of-arrays per row of k:
//   x[e] ~= d[e / 32] * qs[e],  qs in [-127, 127],  d = max|x| / 127 over the 32-block;
//   s[b] = d[b] * sum(qs of block b)   (exact int sum, scaled once)
//   sum16[h] = sum(qs[16h .. 16h + 16)) (for Q6_K's 16-element offsets);
//   ds[2b] = d[b], ds[2b + 1] = s[b] (interleaved copy: one 8-byte load feeds both).
// Rows of qs start 32-byte aligned; rows of d and s hold nb_pad = round_up(nb, 8) entries,
// zero past nb, so kernels can read them 8 at a time without tails.
struct QuantizedActs {
  int8_t* qs = nullptr;      // [m, qs_stride]
  float* d = nullptr;        // [m, nb_pad]
  float* s = nullptr;        // [m, nb_pad]
  int16_t* sum16 = nullptr;  // [m, 2 * nb]
  float* ds = nullptr;       // [m, 2 * nb]
  int64_t m = 0;
  int64_t k = 0;
  int64_t nb = 0;  // k / 32
  int64_t nb_pad = 0;
  int64_t qs_stride = 0;

  const int8_t* row_qs(int64_t i) const { return qs + i * qs_stride; }
  const float* row_d(int64_t i) const { return d + i * nb_pad; }
  const float* row_s(int64_t i) const { return s + i * nb_pad; }
  const int16_t* row_sum16(int64_t i) const { return sum16 + i * 2 * nb; }
  const float* row_ds(int64_t i) const { return ds + i * 2 * nb; }
};

// 16-bit activations (ActivationPrecision::kPrecise) for the 32-element formats, same
// layout with wider codes: x[e] ~= d[e / 32] * qs[e], qs in [-32767, 32767],
// d = max|x| / 32767 over the 32-block; s[b] = d[b] * sum(qs of block b); ds interleaved.
// One 16-bit pass is as exact as two 8-bit ones (error <= max|x| / 65534 per element).
struct WideActs {
  int16_t* qs = nullptr;  // [m, k]
  float* d = nullptr;     // [m, nb_pad]
  float* s = nullptr;     // [m, nb_pad]
  float* ds = nullptr;    // [m, 2 * nb]
  int64_t m = 0;
  int64_t k = 0;
  int64_t nb = 0;  // k / 32
  int64_t nb_pad = 0;

  const int16_t* row_qs(int64_t i) const { return qs + i * k; }
  const float* row_d(int64_t i) const { return d + i * nb_pad; }
  const float* row_s(int64_t i) const { return s + i * nb_pad; }
  const float* row_ds(int64_t i) const { return ds + i * 2 * nb; }
};

}  // namespace tessera::cpu
