// dequantize_row / quantize_row against an independent per-element decoder written from
// the GGUF format description (byte offsets, no shared structs), golden checksums from the
// reference Python implementation (gguf-py), round trips and alignment.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/dequantize.h"
#include "backend/cpu/quant_blocks.h"
#include "common/half.h"
#include "tensor/dtype.h"

namespace tessera::cpu {
namespace {

const DType kQuantTypes[] = {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                             DType::kQ8_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

float h16(const uint8_t* p) { return f16_to_f32(static_cast<uint16_t>(p[0] | p[1] << 8)); }

// ---- independent reference: value of element e of one block, from the format spec -------
//
// Q4_0 (18 B): f16 d | 16 B nibbles; byte l: low = element l, high = element l + 16;
//              v = (q - 8) d
// Q4_1 (20 B): f16 d | f16 m | 16 B nibbles; v = q d + m
// Q5_0 (22 B): f16 d | u32 qh | nibbles; q |= bit e of qh << 4; v = (q - 16) d
// Q5_1 (24 B): f16 d | f16 m | u32 qh | nibbles; v = q d + m
// Q8_0 (34 B): f16 d | 32 x i8; v = q d
// Q4_K (144 B): f16 d | f16 dmin | 12 B scales | 128 B qs; sub-block s = e / 32 uses byte
//   qs[32 (s / 2) + e % 32], low nibble for even s; v = d sc_s q - dmin mn_s
// Q5_K (176 B): as Q4_K with 32 B qh after scales; bit s of qh[e % 32] is bit 4 of q
// Q6_K (210 B): 128 B ql | 64 B qh | 16 x i8 scales | f16 d; element e: half = e / 128,
//   j = e % 128, quarter = j / 32, l = j % 32; low 4 bits from ql[64 half + l + 32 (quarter & 1)]
//   (low nibble for quarter < 2), high 2 bits from qh[32 half + l] >> (2 quarter);
//   v = d scales[e / 16] (q - 32)
void k_scale(const uint8_t* sc, int s, int* scale, int* min) {
  if (s < 4) {
    *scale = sc[s] & 0x3f;
    *min = sc[s + 4] & 0x3f;
  } else {
    *scale = (sc[s + 4] & 0x0f) + 16 * (sc[s - 4] >> 6);
    *min = (sc[s + 4] >> 4) + 16 * (sc[s] >> 6);
  }
}

float ref_element(DType t, const uint8_t* b, int e) {
  switch (t) {
    case DType::kQ4_0: {
      const int q = e < 16 ? (b[2 + e] & 15) : (b[2 + e - 16] >> 4);
      return static_cast<float>(q - 8) * h16(b);
    }
    case DType::kQ4_1: {
      const int q = e < 16 ? (b[4 + e] & 15) : (b[4 + e - 16] >> 4);
      return static_cast<float>(q) * h16(b) + h16(b + 2);
    }
    case DType::kQ5_0: {
      const uint32_t qh = b[2] | b[3] << 8 | b[4] << 16 | static_cast<uint32_t>(b[5]) << 24;
      int q = e < 16 ? (b[6 + e] & 15) : (b[6 + e - 16] >> 4);
      q += 16 * ((qh >> e) & 1);
      return static_cast<float>(q - 16) * h16(b);
    }
    case DType::kQ5_1: {
      const uint32_t qh = b[4] | b[5] << 8 | b[6] << 16 | static_cast<uint32_t>(b[7]) << 24;
      int q = e < 16 ? (b[8 + e] & 15) : (b[8 + e - 16] >> 4);
      q += 16 * ((qh >> e) & 1);
      return static_cast<float>(q) * h16(b) + h16(b + 2);
    }
    case DType::kQ8_0: return static_cast<float>(static_cast<int8_t>(b[2 + e])) * h16(b);
    case DType::kQ4_K:
    case DType::kQ5_K: {
      const int s = e / 32, l = e % 32;
      const int qs_off = t == DType::kQ4_K ? 16 : 48;
      const uint8_t byte = b[qs_off + 32 * (s / 2) + l];
      int q = s % 2 == 0 ? (byte & 15) : (byte >> 4);
      if (t == DType::kQ5_K) q += 16 * ((b[16 + l] >> s) & 1);
      int scale, min;
      k_scale(b + 4, s, &scale, &min);
      return h16(b) * static_cast<float>(scale) * static_cast<float>(q) - h16(b + 2) * static_cast<float>(min);
    }
    case DType::kQ6_K: {
      const int half = e / 128, j = e % 128, quarter = j / 32, l = j % 32;
      const uint8_t lo_byte = b[64 * half + l + 32 * (quarter & 1)];
      const int lo = quarter < 2 ? (lo_byte & 15) : (lo_byte >> 4);
      const int hi = (b[128 + 32 * half + l] >> (2 * quarter)) & 3;
      const int scale = static_cast<int8_t>(b[192 + e / 16]);
      return h16(b + 208) * static_cast<float>(scale * (lo + 16 * hi - 32));
    }
    default: ADD_FAILURE() << "not a block type"; return 0;
  }
}

// ---- deterministic test rows -------------------------------------------------------------

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Random bytes with every fp16 scale field replaced by a finite value in [-2, 2].
std::vector<uint8_t> random_row(DType t, int64_t n, uint64_t seed) {
  const DTypeInfo& info = dtype_info(t);
  std::vector<uint8_t> raw(static_cast<size_t>(row_bytes(t, n)));
  uint64_t st = seed;
  for (auto& v : raw) v = static_cast<uint8_t>(splitmix64(&st) >> 56);
  auto put_half = [&](size_t off) {
    const float f = static_cast<float>(static_cast<int>(splitmix64(&st) % 4001) - 2000) / 1000.0f;
    const uint16_t h = f32_to_f16(f);
    raw[off] = static_cast<uint8_t>(h);
    raw[off + 1] = static_cast<uint8_t>(h >> 8);
  };
  const int64_t nb = n / info.block_size;
  for (int64_t i = 0; i < nb; ++i) {
    const size_t o = static_cast<size_t>(i * info.block_bytes);
    switch (t) {
      case DType::kQ4_0:
      case DType::kQ5_0:
      case DType::kQ8_0: put_half(o); break;
      case DType::kQ6_K: put_half(o + 208); break;
      default:
        put_half(o);
        put_half(o + 2);
        break;
    }
  }
  return raw;
}

// ---- tests -------------------------------------------------------------------------------

TEST(Dequantize, BlockStructSizesMatchDtypeInfo) {
  EXPECT_EQ(dtype_info(DType::kQ4_0).block_bytes, static_cast<int64_t>(sizeof(BlockQ4_0)));
  EXPECT_EQ(dtype_info(DType::kQ4_1).block_bytes, static_cast<int64_t>(sizeof(BlockQ4_1)));
  EXPECT_EQ(dtype_info(DType::kQ5_0).block_bytes, static_cast<int64_t>(sizeof(BlockQ5_0)));
  EXPECT_EQ(dtype_info(DType::kQ5_1).block_bytes, static_cast<int64_t>(sizeof(BlockQ5_1)));
  EXPECT_EQ(dtype_info(DType::kQ8_0).block_bytes, static_cast<int64_t>(sizeof(BlockQ8_0)));
  EXPECT_EQ(dtype_info(DType::kQ4_K).block_bytes, static_cast<int64_t>(sizeof(BlockQ4_K)));
  EXPECT_EQ(dtype_info(DType::kQ5_K).block_bytes, static_cast<int64_t>(sizeof(BlockQ5_K)));
  EXPECT_EQ(dtype_info(DType::kQ6_K).block_bytes, static_cast<int64_t>(sizeof(BlockQ6_K)));
  EXPECT_EQ(dtype_info(DType::kQ4_0).block_size, BlockOf<DType::kQ4_0>::kSize);
  EXPECT_EQ(dtype_info(DType::kQ4_K).block_size, BlockOf<DType::kQ4_K>::kSize);
  EXPECT_EQ(dtype_info(DType::kQ6_K).block_size, BlockOf<DType::kQ6_K>::kSize);
}

TEST(Dequantize, MatchesIndependentDecoderOnRandomBlocks) {
  for (DType t : kQuantTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const DTypeInfo& info = dtype_info(t);
    const int64_t n = 8 * info.block_size;
    const auto raw = random_row(t, n, 1234 + static_cast<uint64_t>(t));
    std::vector<float> got(static_cast<size_t>(n));
    dequantize_row(t, raw.data(), got.data(), n);
    for (int64_t e = 0; e < n; ++e) {
      const float want = ref_element(t, raw.data() + e / info.block_size * info.block_bytes,
                                     static_cast<int>(e % info.block_size));
      ASSERT_NEAR(got[e], want, 1e-6f * std::max(1.0f, std::fabs(want))) << "element " << e;
    }
  }
}

TEST(Dequantize, HandCraftedBlocks) {
  // Q4_1, d = 0.5, m = -1: byte l = (l + 1) << 4 | l -> element l = l, element l + 16 = l + 1.
  uint8_t q41[20];
  const uint16_t d = f32_to_f16(0.5f), m = f32_to_f16(-1.0f);
  std::memcpy(q41, &d, 2);
  std::memcpy(q41 + 2, &m, 2);
  for (int l = 0; l < 16; ++l) q41[4 + l] = static_cast<uint8_t>(((l + 1) & 15) << 4 | l);
  float y[32];
  dequantize_row(DType::kQ4_1, q41, y, 32);
  for (int l = 0; l < 16; ++l) {
    EXPECT_EQ(y[l], 0.5f * l - 1.0f);
    EXPECT_EQ(y[l + 16], 0.5f * ((l + 1) & 15) - 1.0f);
  }
  // Q5_0, d = 1, nibbles 0, qh = only bit 31 set: all -16 except element 31 = 0.
  uint8_t q50[22] = {};
  const uint16_t one = f32_to_f16(1.0f);
  std::memcpy(q50, &one, 2);
  q50[5] = 0x80;
  dequantize_row(DType::kQ5_0, q50, y, 32);
  for (int l = 0; l < 31; ++l) EXPECT_EQ(y[l], -16.0f);
  EXPECT_EQ(y[31], 0.0f);
  // Q4_K, d = 1, dmin = 0; scale of sub-block 5 = 3 | 2 << 4 = 35 (low bits in scales[9],
  // high bits in the top of scales[1]), all others 0; all codes 1 -> sub-block 5 is 35.
  std::vector<uint8_t> q4k(144, 0);
  std::memcpy(q4k.data(), &one, 2);
  q4k[4 + 9] = 3;
  q4k[4 + 1] = 2 << 6;
  for (int l = 0; l < 128; ++l) q4k[16 + l] = 0x11;
  std::vector<float> yk(256);
  dequantize_row(DType::kQ4_K, q4k.data(), yk.data(), 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(yk[e], e / 32 == 5 ? 35.0f : 0.0f) << e;
}

// Checksums of gguf-py's dequantize (gguf 0.19.0) of random_row(t, 4 * block, 77):
//   sum v and sum v * (e % 13 + 1). Regenerate: run DISABLED_DumpGoldenInputs, then
//   for each type: v = gguf.quants.dequantize(np.fromfile(f"/tmp/golden_{T}.bin", np.uint8),
//   GGMLQuantizationType[T]).ravel().astype(np.float64); print(v.sum(), (v * (np.arange(v.size)
//   % 13 + 1)).sum())
struct Golden {
  DType t;
  double sum, weighted;
};
const Golden kGolden[] = {
    {DType::kQ4_0, -15.5361328125, -169.8173828125},
    {DType::kQ4_1, -528.586181640625, -3626.8544921875},
    {DType::kQ5_0, 22.03125, 219.92138671875},
    {DType::kQ5_1, -85.49169921875, -733.27734375},
    {DType::kQ8_0, 1472.101318359375, 14125.544311523438},
    {DType::kQ4_K, 199889.25317382812, 1410432.4605712891},
    {DType::kQ5_K, 64946.546875, 408579.1572265625},
    {DType::kQ6_K, -33179.431396484375, -366734.43310546875},
};

TEST(Dequantize, DISABLED_DumpGoldenInputs) {
  for (DType t : kQuantTypes) {
    const auto raw = random_row(t, 4 * dtype_info(t).block_size, 77);
    const std::string path = "/tmp/golden_" + std::string(dtype_name(t)) + ".bin";
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(raw.data(), 1, raw.size(), f);
    std::fclose(f);
  }
}

TEST(Dequantize, MatchesGgufPyChecksums) {
  for (const Golden& g : kGolden) {
    SCOPED_TRACE(std::string(dtype_name(g.t)));
    const int64_t n = 4 * dtype_info(g.t).block_size;
    const auto raw = random_row(g.t, n, 77);
    std::vector<float> y(static_cast<size_t>(n));
    dequantize_row(g.t, raw.data(), y.data(), n);
    double sum = 0, weighted = 0, mag = 0;
    for (int64_t e = 0; e < n; ++e) {
      sum += y[e];
      weighted += y[e] * static_cast<double>(e % 13 + 1);
      mag += std::fabs(y[e]) * 13;
    }
    EXPECT_NEAR(sum, g.sum, 1e-9 * mag + 1e-9);
    EXPECT_NEAR(weighted, g.weighted, 1e-9 * mag + 1e-9);
  }
}

TEST(Dequantize, AnyAlignment) {
  for (DType t : kQuantTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const int64_t n = 2 * dtype_info(t).block_size;
    const auto raw = random_row(t, n, 5);
    std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    dequantize_row(t, raw.data(), want.data(), n);
    for (int off = 1; off < 4; ++off) {
      std::vector<uint8_t> buf(raw.size() + off);
      std::memcpy(buf.data() + off, raw.data(), raw.size());
      dequantize_row(t, buf.data() + off, got.data(), n);
      EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)));
    }
  }
}

TEST(Dequantize, FloatFormats) {
  const float src[4] = {1.0f, -2.5f, 65504.0f, 1.0f / 1024};
  uint16_t h[4], bh[4];
  for (int i = 0; i < 4; ++i) {
    h[i] = f32_to_f16(src[i]);
    bh[i] = f32_to_bf16(src[i]);
  }
  float y[4];
  dequantize_row(DType::kF16, h, y, 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i], src[i]);
  dequantize_row(DType::kBF16, bh, y, 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i], bf16_to_f32(bh[i]));
  dequantize_row(DType::kF32, src, y, 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i], src[i]);
  uint16_t back[4];
  quantize_row(DType::kF16, src, back, 4);
  EXPECT_EQ(0, std::memcmp(back, h, sizeof(h)));
}

// quantize_row -> dequantize_row stays within the format's step size.
TEST(Quantize, RoundTripIsClose) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (DType t : kQuantTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const int64_t n = 1024;
    std::vector<float> x(n), y(n);
    for (auto& v : x) v = dist(rng);
    x[5] = 0;  // a zero block must survive too
    std::vector<uint8_t> q(static_cast<size_t>(row_bytes(t, n)));
    quantize_row(t, x.data(), q.data(), n);
    dequantize_row(t, q.data(), y.data(), n);
    double err2 = 0, x2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      err2 += (x[i] - y[i]) * (x[i] - y[i]);
      x2 += x[i] * x[i];
    }
    const double rel_rms = std::sqrt(err2 / x2);
    // 4-bit ~0.1, 5-bit ~0.05, 6-bit ~0.03, 8-bit ~0.005 for Gaussian data.
    double limit = 0.12;
    if (t == DType::kQ5_0 || t == DType::kQ5_1 || t == DType::kQ5_K) limit = 0.06;
    if (t == DType::kQ6_K) limit = 0.035;
    if (t == DType::kQ8_0) limit = 0.008;
    EXPECT_LT(rel_rms, limit);
    std::vector<float> zeros(256, 0.0f), back(256, 1.0f);
    quantize_row(t, zeros.data(), q.data(), 256);
    dequantize_row(t, q.data(), back.data(), 256);
    for (float v : back) EXPECT_EQ(v, 0.0f);
  }
}

}  // namespace
}  // namespace tessera::cpu
