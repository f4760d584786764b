// Precise activations (16-bit blocks for the 32-element formats, x = Q(x) + Q(x - Q(x)) for
// K-quants) bring quantized-weight matmuls within ~1/250 of the int8 error against the exact
// product over the dequantized weights.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/dequantize.h"
#include "backend/cpu/matmul.h"

namespace tessera {
namespace {

double max_error(DType t, int64_t m, cpu::ActivationPrecision p) {
  const int64_t n = 40, k = 512;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> w(n * k), x(m * k);
  for (auto& v : w) v = nd(rng) * 0.05f;
  for (auto& v : x) v = nd(rng);
  x[5] = 30.0f;  // an outlier, as real activations have
  const int64_t rb = row_bytes(t, k);
  std::vector<std::byte> q(static_cast<size_t>(n * rb));
  for (int64_t j = 0; j < n; ++j) cpu::quantize_row(t, &w[j * k], q.data() + j * rb, k);
  TensorView tv;
  tv.dtype = t;
  tv.shape = {n, k};
  tv.data = q.data();
  tv.nbytes = q.size();
  std::vector<float> y(m * n);
  cpu::set_activation_precision(p);
  cpu::matmul(x.data(), m, tv, y.data());
  cpu::set_activation_precision(cpu::ActivationPrecision::kPrecise);
  std::vector<float> row(k);
  double err = 0;
  for (int64_t j = 0; j < n; ++j) {
    cpu::dequantize_row(t, q.data() + j * rb, row.data(), k);
    for (int64_t i = 0; i < m; ++i) {
      double exact = 0;
      for (int64_t e = 0; e < k; ++e) exact += double(x[i * k + e]) * row[e];
      err = std::max(err, std::fabs(exact - y[i * n + j]));
    }
  }
  return err;
}

TEST(MatmulPrecision, PreciseActivationsAreNearExact) {
  for (DType t : {DType::kQ4_0, DType::kQ4_1, DType::kQ5_1, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K}) {
    for (int64_t m : {1, 9}) {  // decode and prefill kernels
      const double e8 = max_error(t, m, cpu::ActivationPrecision::kInt8);
      const double e16 = max_error(t, m, cpu::ActivationPrecision::kPrecise);
      EXPECT_GT(e8, 1e-3) << dtype_name(t) << " m=" << m;  // int8 error is visible
      EXPECT_LT(e16, e8 / 50) << dtype_name(t) << " m=" << m << " int8 " << e8;
    }
  }
}

}  // namespace
}  // namespace tessera
