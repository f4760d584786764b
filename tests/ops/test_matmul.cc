// matmul against double-precision references over dequantized weights, for every weight
// dtype, decode and prefill shapes, 1 and 2 threads, misaligned weight rows.
//
// Quantized weights run with both activation precisions and are checked twice:
//  - against x quantized the way the kernels document (blocks of 32, d = max|x| / L,
//    round-half-even; L = 127 for int8, 32767 for the 16-bit precise path of the 32-element
//    formats): only fp32 rounding differs, so the tolerance is tight;
//  - against the exact x, within the rigorous bound of that quantization:
//    sum_b (max_b |x| / 2L) sum_{e in b} |w_e|.
// K-quants in precise mode run two 8-bit passes; they are held to the int8 bound here and
// to a tighter one in test_matmul_precision.cc.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/dequantize.h"
#include "backend/cpu/matmul.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace tessera::cpu {
namespace {

struct Weight {
  std::vector<std::byte> storage;
  TensorView view;
  std::vector<double> deq;  // [n, k] dequantized
};

// Weight [n, k] of dtype t, its data starting `misalign` bytes past an aligned address.
Weight make_weight(DType t, int64_t n, int64_t k, int misalign, std::mt19937* rng) {
  std::normal_distribution<float> dist(0.01f, 0.05f);  // non-zero mean exercises the min terms
  Weight w;
  const int64_t rb = row_bytes(t, k);
  w.storage.resize(static_cast<size_t>(n * rb + 64));
  std::byte* base = w.storage.data() + (64 - reinterpret_cast<uintptr_t>(w.storage.data()) % 64) % 64;
  base += misalign;
  std::vector<float> row(static_cast<size_t>(k)), back(static_cast<size_t>(k));
  w.deq.resize(static_cast<size_t>(n * k));
  for (int64_t j = 0; j < n; ++j) {
    for (auto& v : row) v = dist(*rng);
    quantize_row(t, row.data(), base + j * rb, k);
    dequantize_row(t, base + j * rb, back.data(), k);
    for (int64_t e = 0; e < k; ++e) w.deq[j * k + e] = back[e];
  }
  w.view.dtype = t;
  w.view.shape = {n, k};
  w.view.data = base;
  w.view.nbytes = static_cast<size_t>(n * rb);
  return w;
}

// The activation precision for the life of a scope.
struct ScopedPrecision {
  explicit ScopedPrecision(ActivationPrecision p) : saved(activation_precision()) { set_activation_precision(p); }
  ~ScopedPrecision() { set_activation_precision(saved); }
  ActivationPrecision saved;
};

bool is_legacy_quant(DType t) {
  return t == DType::kQ4_0 || t == DType::kQ4_1 || t == DType::kQ5_0 || t == DType::kQ5_1 || t == DType::kQ8_0;
}

// x as the integer kernels see it (see matmul.h): per 32-block, d = max|x| / levels,
// q = round_half_even(x * (levels / max)).
std::vector<double> quantize_x_like_kernels(const std::vector<float>& x, float levels) {
  std::vector<double> out(x.size());
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0;
    for (size_t e = b; e < b + 32; ++e) amax = std::max(amax, std::fabs(x[e]));
    const float d = amax / levels;
    const float id = amax > 0 ? levels / amax : 0.0f;
    for (size_t e = b; e < b + 32; ++e) out[e] = static_cast<double>(std::nearbyint(x[e] * id)) * d;
  }
  return out;
}

struct Case {
  DType t;
  int64_t m, n, k;
};

std::string name_of(const Case& c) {
  return std::string(dtype_name(c.t)) + " m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) +
         " k=" + std::to_string(c.k);
}

void check_case(const Case& c, int misalign, uint32_t seed,
                ActivationPrecision precision = ActivationPrecision::kInt8) {
  const bool precise = precision == ActivationPrecision::kPrecise;
  SCOPED_TRACE(name_of(c) + " misalign=" + std::to_string(misalign) + (precise ? " precise" : " int8"));
  ScopedPrecision scoped(precision);
  // Levels of the reference quantization; 0: no tight reference (K-quants, precise mode).
  const float levels = !precise ? 127.0f : is_legacy_quant(c.t) ? 32767.0f : 0.0f;
  std::mt19937 rng(seed);
  const Weight w = make_weight(c.t, c.n, c.k, misalign, &rng);
  std::normal_distribution<float> xdist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(c.m * c.k));
  for (auto& v : x) v = xdist(rng);
  x[0] = 8.0f;  // an outlier, as real activations have

  const bool quantized = dtype_info(c.t).quantized;
  std::vector<float> y1(static_cast<size_t>(c.m * c.n), -1.0f), y2(y1.size(), -2.0f);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  matmul(x.data(), c.m, w.view, y1.data());
  omp_set_num_threads(2);
  matmul(x.data(), c.m, w.view, y2.data());
  omp_set_num_threads(saved);
  // Every output is computed by the same instruction sequence whatever the split.
  ASSERT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float))) << "1 vs 2 threads differ";

  int bad = 0;
  for (int64_t i = 0; i < c.m && bad < 5; ++i) {
    std::vector<float> xr(x.begin() + i * c.k, x.begin() + (i + 1) * c.k);
    const std::vector<double> xq = quantized && levels > 0 ? quantize_x_like_kernels(xr, levels)
                                                           : std::vector<double>(xr.begin(), xr.end());
    for (int64_t j = 0; j < c.n && bad < 5; ++j) {
      const double* wr = &w.deq[j * c.k];
      double exact = 0, with_xq = 0, mag = 0, wmax = 0, bound = 0;
      for (int64_t e = 0; e < c.k; ++e) {
        exact += static_cast<double>(xr[e]) * wr[e];
        with_xq += xq[e] * wr[e];
        mag += std::fabs(xr[e] * wr[e]);
        wmax = std::max(wmax, std::fabs(wr[e]));
      }
      const double got = y1[i * c.n + j];
      if (!quantized) {
        if (std::fabs(got - exact) > 1e-5 * mag + 1e-6) {
          ADD_FAILURE() << "y[" << i << "," << j << "] = " << got << " want " << exact << " (mag " << mag << ")";
          ++bad;
        }
        continue;
      }
      double xabs = 0;
      for (int64_t b = 0; b < c.k; b += 32) {
        float amax = 0;
        double wsum = 0;
        for (int64_t e = b; e < b + 32; ++e) {
          amax = std::max(amax, std::fabs(xr[e]));
          wsum += std::fabs(wr[e]);
          xabs += std::fabs(xq[e]);
        }
        bound += amax / (2.0 * (levels > 0 ? levels : 127.0)) * wsum;
      }
      // fp32 rounding: relative to the largest intermediate, bounded by sum |xq| max |w|
      // (a min term can exceed |w| where q d and m cancel; 4x covers it).
      const double fp_tol = 2e-5 * xabs * wmax * 4 + 1e-6;
      const bool tight_ok = levels == 0 || std::fabs(got - with_xq) <= fp_tol;
      if (!tight_ok || std::fabs(got - exact) > bound * 1.001 + fp_tol) {
        ADD_FAILURE() << "y[" << i << "," << j << "] = " << got << " want " << with_xq << " (quantized x), "
                      << exact << " (exact x); tol " << fp_tol << ", bound " << bound;
        ++bad;
      }
    }
  }
}

const DType kAllTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,
                           DType::kQ5_1, DType::kQ8_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

class MatmulAllTypes : public ::testing::TestWithParam<std::tuple<DType, ActivationPrecision>> {};

TEST_P(MatmulAllTypes, MatchesReferenceOverShapes) {
  const auto [t, precision] = GetParam();
  const int64_t ms[] = {1, 2, 7, 64, 130};
  const int64_t ns[] = {1, 5, 33, 576};
  std::vector<int64_t> ks;
  for (int64_t k : {64, 256, 576, 1536})
    if (k % dtype_info(t).block_size == 0) ks.push_back(k);
  int idx = 0;
  for (int64_t m : ms) {
    for (int64_t n : ns) {
      // Every (m, n) pair; k cycles so that each k meets several shapes; big m * n gets the
      // smallest k to keep the double-precision reference affordable under sanitizers.
      int64_t k = ks[idx++ % ks.size()];
      if (m * n > 10000) k = ks.front();
      check_case({t, m, n, k}, 0, static_cast<uint32_t>(1000 + idx), precision);
    }
  }
}

TEST_P(MatmulAllTypes, DeepKAndOddRowStarts) {
  const auto [t, precision] = GetParam();
  // k = 1536 (prefill tile and decode); weight rows starting at odd and 2-mod-4 addresses.
  check_case({t, 7, 33, 1536}, 1, 11, precision);
  check_case({t, 1, 40, 1536}, 2, 12, precision);
  check_case({t, 5, 9, dtype_info(t).block_size == 1 ? 12 : dtype_info(t).block_size}, 3, 13, precision);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MatmulAllTypes,
                         ::testing::Combine(::testing::ValuesIn(kAllTypes),
                                            ::testing::Values(ActivationPrecision::kInt8, ActivationPrecision::kPrecise)),
                         [](const auto& info) {
                           return std::string(dtype_name(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) == ActivationPrecision::kInt8 ? "_int8" : "_precise");
                         });

TEST(Matmul, FloatPathsAreTight) {
  // F32 with k not a multiple of 8 (scalar tail) and a larger problem; 1e-5 relative.
  check_case({DType::kF32, 3, 17, 13}, 0, 21);
  check_case({DType::kF32, 64, 96, 576}, 0, 22);
  check_case({DType::kF16, 9, 70, 200}, 2, 23);
  check_case({DType::kBF16, 9, 70, 200}, 1, 24);
}

TEST(Matmul, Q8_0MinusOneTwentyEightIsExact) {
  // llama.cpp never writes q = -128, but the format allows it; both paths must handle it.
  std::vector<uint8_t> row(2 * 34, 0);
  const uint16_t d = 0x3c00;  // 1.0
  for (int b = 0; b < 2; ++b) {
    std::memcpy(&row[34 * b], &d, 2);
    for (int e = 0; e < 32; ++e) row[34 * b + 2 + e] = static_cast<uint8_t>(e % 2 ? 0x80 : 3);
  }
  for (auto p : {ActivationPrecision::kInt8, ActivationPrecision::kPrecise})
  for (int64_t m : {1, 6}) {
    ScopedPrecision scoped(p);
    std::vector<uint8_t> w(4 * row.size());
    for (int j = 0; j < 4; ++j) std::memcpy(&w[j * row.size()], row.data(), row.size());
    TensorView v;
    v.dtype = DType::kQ8_0;
    v.shape = {4, 64};
    v.data = reinterpret_cast<const std::byte*>(w.data());
    v.nbytes = w.size();
    std::vector<float> x(m * 64, -1.0f), y(m * 4);
    matmul(x.data(), m, v, y.data());
    // 32 x (128 - 3); exact in int8 (x = -127 * (1/127)), to fp32 rounding in 16 bits.
    for (float out : y) EXPECT_NEAR(out, 64.0f * 125.0f / 2.0f, p == ActivationPrecision::kInt8 ? 0.0f : 0.05f) << "m=" << m;
  }
}

TEST(Matmul, ManyRowsWithLongK) {
  // m beyond one L2 block of x rows (128 rows at k = 1536), odd remainder.
  for (auto p : {ActivationPrecision::kInt8, ActivationPrecision::kPrecise}) {
    check_case({DType::kQ4_1, 301, 40, 1536}, 0, 31, p);
    check_case({DType::kQ8_0, 301, 24, 1536}, 1, 32, p);
  }
}

TEST(Matmul, MultiMatchesSeparateCalls) {
  for (auto p : {ActivationPrecision::kInt8, ActivationPrecision::kPrecise}) {
  ScopedPrecision scoped(p);
  std::mt19937 rng(9);
  const int64_t k = 576;
  const Weight wq = make_weight(DType::kQ4_1, 576, k, 0, &rng);
  const Weight wk = make_weight(DType::kQ8_0, 192, k, 2, &rng);
  const Weight wv = make_weight(DType::kF32, 40, k, 0, &rng);
  for (int64_t m : {1, 3, 64}) {
    for (int threads : {1, 2}) {
      std::normal_distribution<float> xd(0.0f, 1.0f);
      std::vector<float> x(static_cast<size_t>(m * k));
      for (auto& v : x) v = xd(rng);
      std::vector<float> q1(m * 576), k1(m * 192), v1(m * 40), q2(q1.size()), k2(k1.size()), v2(v1.size());
      const int saved = omp_get_max_threads();
      omp_set_num_threads(threads);
      matmul(x.data(), m, wq.view, q1.data());
      matmul(x.data(), m, wk.view, k1.data());
      matmul(x.data(), m, wv.view, v1.data());
      const MatmulOutput outs[] = {{&wq.view, q2.data()}, {&wk.view, k2.data()}, {&wv.view, v2.data()}};
      matmul_multi(x.data(), m, outs);
      omp_set_num_threads(saved);
      EXPECT_EQ(0, std::memcmp(q1.data(), q2.data(), q1.size() * sizeof(float))) << "m=" << m;
      EXPECT_EQ(0, std::memcmp(k1.data(), k2.data(), k1.size() * sizeof(float))) << "m=" << m;
      EXPECT_EQ(0, std::memcmp(v1.data(), v2.data(), v1.size() * sizeof(float))) << "m=" << m;
    }
  }
  }
}

TEST(Matmul, ZeroActivationsGiveZero) {
  std::mt19937 rng(3);
  for (auto p : {ActivationPrecision::kInt8, ActivationPrecision::kPrecise}) {
    ScopedPrecision scoped(p);
    for (DType t : {DType::kQ4_1, DType::kQ8_0, DType::kQ6_K}) {
      const Weight w = make_weight(t, 8, 256, 0, &rng);
      std::vector<float> x(2 * 256, 0.0f), y(2 * 8, 1.0f);
      matmul(x.data(), 2, w.view, y.data());
      for (float v : y) EXPECT_EQ(v, 0.0f) << dtype_name(t);
    }
  }
}

}  // namespace
}  // namespace tessera::cpu
