// DeviceLinear (exec/cuda/device_linear.h), the one way the CUDA pass multiplies by a weight:
// each of its products, GEMM and decode GEMV, against an fp32 CPU reference over the same
// 16-bit values, for every weight kind (dense bf16 and f16, each with activations of its
// type). A new kind joins the typed list and must pass the same products. Skips when no CUDA device is usable (CI compiles it).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cuda/matmul.h"
#include "cuda/cuda_test_util.h"
#include "exec/cuda/device_linear.h"

namespace tessera {
namespace {

using cuda::DeviceLinear;
using cuda::LinearKind;
using cuda_test::DeviceBuffer;
using cuda_test::ElemData;

// y [n, out] = x [n, in] . w^T in fp32 (double sums).
std::vector<float> reference(const std::vector<float>& x, const std::vector<float>& w, int64_t n, int64_t in,
                             int64_t out) {
  std::vector<float> y(static_cast<size_t>(n * out));
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t o = 0; o < out; ++o) {
      double s = 0;
      for (int64_t i = 0; i < in; ++i) s += static_cast<double>(x[t * in + i]) * w[o * in + i];
      y[t * out + o] = static_cast<float>(s);
    }
  }
  return y;
}

float silu(float v) { return v / (1.0f + std::exp(-v)); }

// Sums of `in` products of unit-scale values: their rounding noise grows with sqrt(in).
constexpr float kAbs = 0.05f;

template <typename T>
class DeviceLinearOfEachKind : public ::testing::Test {};
TYPED_TEST_SUITE(DeviceLinearOfEachKind, cuda_test::ElemTypes, cuda_test::ElemTypeNames);

TYPED_TEST(DeviceLinearOfEachKind, EveryProductMatchesTheCpu) {
  using T = TypeParam;
  REQUIRE_DEVICE();
  const int64_t in = 256, out = 384;
  std::mt19937 rng(7);
  ElemData<T> w(static_cast<size_t>(out * in), rng, 1.0f / std::sqrt(static_cast<float>(in)));
  DeviceBuffer<T> dw(w.h);
  cuda::Gemm gemm;
  {
    const DeviceLinear lin = DeviceLinear::dense(dw.p, out, in);
    const LinearKind want = std::is_same_v<T, cuda::f16> ? LinearKind::kF16 : LinearKind::kBf16;
    EXPECT_EQ(lin.kind(), want);
    // Activations of the other element type: refused with the kinds named, nothing queued.
    using Other = std::conditional_t<std::is_same_v<T, cuda::f16>, cuda::bf16, cuda::f16>;
    DeviceBuffer<Other> ox(static_cast<size_t>(in)), oy(static_cast<size_t>(out));
    EXPECT_NE(lin.matmul(gemm, ox.p, 1, oy.p, nullptr).find("no kernel"), std::string::npos);
    EXPECT_NE(lin.gemv(cuda::GemvInput<Other>{ox.p}, 1, oy.p, nullptr, cuda::GemvOptions{}).find("no kernel"),
              std::string::npos);
    ASSERT_EQ(lin.out_features(), out);
    ASSERT_EQ(lin.in_features(), in);
    for (int64_t n : {1, 3, 16, 40}) {
      SCOPED_TRACE("n = " + std::to_string(n));
      ElemData<T> x(static_cast<size_t>(n * in), rng);
      ElemData<T> residual(static_cast<size_t>(n * out), rng);
      DeviceBuffer<T> dx(x.h);
      const std::vector<float> ref = reference(x.f, w.f, n, in, out);
      std::vector<float> ref_add(ref);
      for (size_t i = 0; i < ref_add.size(); ++i) ref_add[i] += residual.f[i];

      DeviceBuffer<T> y(static_cast<size_t>(n * out));
      ASSERT_EQ(lin.matmul(gemm, dx.p, n, y.p, nullptr), "");
      DeviceBuffer<float> yf(static_cast<size_t>(n * out));
      ASSERT_EQ(lin.matmul_f32(gemm, dx.p, n, yf.p, nullptr), "");
      DeviceBuffer<T> ya(residual.h);
      ASSERT_EQ(lin.matmul_add(gemm, dx.p, n, ya.p, nullptr), "");
      CUDA_OK(cudaDeviceSynchronize());
      cuda_test::expect_close(y.download(), ref, cuda_test::rel_bound<T>(), kAbs, "matmul");
      cuda_test::expect_close(ya.download(), ref_add, cuda_test::rel_bound<T>(), kAbs, "matmul_add");
      const std::vector<float> got_f = yf.download();
      for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(got_f[i], ref[i], 1e-3f + 1e-3f * std::fabs(ref[i])) << i;

      if (!lin.gemv_supported(n)) {
        EXPECT_GT(n, cuda::kGemvMaxTokens);
        continue;
      }
      const cuda::GemvOptions opt{};
      DeviceBuffer<T> g(static_cast<size_t>(n * out));
      ASSERT_EQ(lin.gemv({dx.p}, n, g.p, nullptr, opt), "");
      DeviceBuffer<float> gf(static_cast<size_t>(n * out));
      ASSERT_EQ(lin.gemv_f32(cuda::GemvInput<T>{dx.p}, n, gf.p, nullptr, opt), "");
      DeviceBuffer<T> ga(residual.h);
      ASSERT_EQ(lin.gemv_add({dx.p}, n, ga.p, nullptr, opt), "");
      // As a fused gate/up weight: gate = rows [0, out/2), up = rows [out/2, out).
      DeviceBuffer<T> gs(static_cast<size_t>(n * out / 2));
      ASSERT_EQ(lin.gemv_silu_mul({dx.p}, n, gs.p, nullptr, opt), "");
      CUDA_OK(cudaDeviceSynchronize());
      cuda_test::expect_close(g.download(), ref, cuda_test::rel_bound<T>(), kAbs, "gemv");
      cuda_test::expect_close(ga.download(), ref_add, cuda_test::rel_bound<T>(), kAbs, "gemv_add");
      const std::vector<float> got_gf = gf.download();
      for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(got_gf[i], ref[i], 1e-3f + 1e-3f * std::fabs(ref[i])) << i;
      std::vector<float> ref_silu(static_cast<size_t>(n * out / 2));
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t j = 0; j < out / 2; ++j) {
          ref_silu[t * out / 2 + j] = silu(ref[t * out + j]) * ref[t * out + out / 2 + j];
        }
      }
      cuda_test::expect_close(gs.download(), ref_silu, 2 * cuda_test::rel_bound<T>(), kAbs, "gemv_silu_mul");
    }
  }
}

}  // namespace
}  // namespace tessera
