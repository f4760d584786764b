// Every CUDA op against its CPU twin (src/backend/cpu) on the same bf16-rounded inputs, over
// shape sweeps; the CPU computes in fp32, so the bound is bf16's output rounding plus a
// little accumulation-order noise. Skips when no CUDA device is usable (CI compiles it).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/cuda/ops.h"

namespace tessera {
namespace {

using cuda::bf16;

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << cudaGetErrorString(cudaGetLastError())

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define REQUIRE_DEVICE() \
  if (!have_device()) GTEST_SKIP() << "no CUDA device"

// Random values rounded to bf16, kept both ways.
struct Bf16Data {
  std::vector<bf16> h;
  std::vector<float> f;  // exactly the bf16 values
  Bf16Data(size_t n, std::mt19937& rng, float scale = 1.0f) : h(n), f(n) {
    std::normal_distribution<float> d(0.0f, scale);
    for (size_t i = 0; i < n; ++i) {
      h[i] = __float2bfloat16(d(rng));
      f[i] = __bfloat162float(h[i]);
    }
  }
};

template <typename T>
struct DeviceBuffer {
  T* p = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) {
    cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(count, 1) * sizeof(T));
  }
  explicit DeviceBuffer(const std::vector<T>& v) : DeviceBuffer(v.size()) {
    cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  ~DeviceBuffer() { cudaFree(p); }
  std::vector<T> download() const {
    std::vector<T> v(n);
    cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
    return v;
  }
};

// |gpu - cpu| <= rel * |cpu| + abs for every element; reports the worst.
void expect_close(const std::vector<bf16>& gpu, const std::vector<float>& cpu, float rel, float abs,
                  const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size());
  size_t bad = 0, worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double diff = std::fabs(__bfloat162float(gpu[i]) - cpu[i]);
    const double bound = rel * std::fabs(cpu[i]) + abs;
    if (diff > bound) ++bad;
    if (diff - bound > worst_excess) worst_excess = diff - bound, worst = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": worst at " << worst << " gpu " << __bfloat162float(gpu[worst]) << " cpu "
                     << cpu[worst];
}

constexpr float kRel = 1.0f / 128;  // bf16 keeps 8 significant bits: rounding <= 2^-9 relative

TEST(CudaOps, RmsNormMatchesCpu) {
  REQUIRE_DEVICE();
  std::mt19937 rng(1);
  for (int64_t dim : {64, 576, 2048, 4096, 5120}) {
    for (int64_t n : {1, 7, 33}) {
      Bf16Data x(n * dim, rng, 2.0f), w(dim, rng);
      std::vector<float> want(n * dim);
      cpu::rms_norm(x.f.data(), w.f.data(), 1e-5f, n, dim, want.data());
      DeviceBuffer<bf16> dx(x.h), dw(w.h), dout(n * dim);
      cuda::rms_norm(dx.p, dw.p, 1e-5f, n, dim, dout.p, nullptr);
      CUDA_OK(cudaDeviceSynchronize());
      expect_close(dout.download(), want, kRel, 1e-3f, "rms_norm dim " + std::to_string(dim));
      // In place.
      cuda::rms_norm(dx.p, dw.p, 1e-5f, n, dim, dx.p, nullptr);
      CUDA_OK(cudaDeviceSynchronize());
      expect_close(dx.download(), want, kRel, 1e-3f, "rms_norm in place");
    }
  }
}

TEST(CudaOps, FusedAddRmsNormEqualsAddThenNorm) {
  REQUIRE_DEVICE();
  std::mt19937 rng(2);
  for (int64_t dim : {64, 4096}) {
    const int64_t n = 9;
    Bf16Data x(n * dim, rng), r(n * dim, rng, 4.0f), w(dim, rng);
    // CPU: the residual rounded to bf16 after the add, then normalized.
    std::vector<float> sum(n * dim), want(n * dim);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = __bfloat162float(__float2bfloat16(x.f[i] + r.f[i]));
    cpu::rms_norm(sum.data(), w.f.data(), 1e-6f, n, dim, want.data());
    DeviceBuffer<bf16> dx(x.h), dr(r.h), dw(w.h);
    cuda::fused_add_rms_norm(dx.p, dr.p, dw.p, 1e-6f, n, dim, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    expect_close(dr.download(), sum, 0.0f, 0.0f, "residual");
    expect_close(dx.download(), want, kRel, 1e-3f, "normalized");
  }
}

TEST(CudaOps, SiluAndMulMatchesCpu) {
  REQUIRE_DEVICE();
  std::mt19937 rng(3);
  for (int64_t inter : {1, 172, 14336}) {
    const int64_t n = 5;
    Bf16Data g(n * inter, rng, 3.0f), u(n * inter, rng);
    std::vector<float> want(n * inter);
    cpu::silu_and_mul(g.f.data(), u.f.data(), n, inter, want.data());
    DeviceBuffer<bf16> dg(g.h), du(u.h), dout(n * inter);
    cuda::silu_and_mul(dg.p, du.p, n, inter, dout.p, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    expect_close(dout.download(), want, kRel, 1e-4f, "silu_and_mul inter " + std::to_string(inter));
  }
}

TEST(CudaOps, RopeMatchesCpuBothLayoutsWithLlama3Scaling) {
  REQUIRE_DEVICE();
  std::mt19937 rng(4);
  for (int64_t head_dim : {64, 128}) {
    ModelConfig c;
    c.head_dim = head_dim;
    c.rope_theta = 500000.0;
    c.rope_scaling.type = RopeScaling::Type::kLlama3;
    c.rope_scaling.factor = 8.0;
    c.rope_scaling.low_freq_factor = 1.0;
    c.rope_scaling.high_freq_factor = 4.0;
    c.rope_scaling.original_max_position_embeddings = 8192;
    std::vector<float> inv_freq(head_dim / 2);
    cpu::rope_inv_freq(c, nullptr, inv_freq.data());
    for (RopeLayout layout : {RopeLayout::kHalf, RopeLayout::kInterleaved}) {
      for (int64_t heads : {1, 8, 32}) {
        const int64_t tokens = 17;
        std::vector<int32_t> pos(tokens);
        for (auto& p : pos) p = static_cast<int32_t>(rng() % 131072);
        pos[0] = 0;
        Bf16Data x(tokens * heads * head_dim, rng);
        std::vector<float> want = x.f;
        cpu::apply_rope(want.data(), pos.data(), tokens, heads, head_dim, inv_freq.data(), layout);
        DeviceBuffer<bf16> dx(x.h);
        DeviceBuffer<int32_t> dpos(pos);
        DeviceBuffer<float> dfreq(inv_freq);
        cuda::apply_rope(dx.p, dpos.p, tokens, heads, head_dim, dfreq.p, layout, nullptr);
        CUDA_OK(cudaDeviceSynchronize());
        // Angles up to ~1e5 rad: fp32 argument reduction differs slightly between libms.
        expect_close(dx.download(), want, kRel, 2e-3f, "rope head_dim " + std::to_string(head_dim));
      }
    }
  }
}

TEST(CudaOps, EmbeddingCopiesRowsAndZerosBadIds) {
  REQUIRE_DEVICE();
  std::mt19937 rng(5);
  const int64_t vocab = 1000, dim = 576;
  Bf16Data table(vocab * dim, rng);
  const std::vector<int32_t> ids = {0, 999, 17, 17, -1, 1000, 512};
  DeviceBuffer<bf16> dt(table.h), dout(ids.size() * dim);
  DeviceBuffer<int32_t> dids(ids);
  cuda::embedding(dt.p, vocab, dim, dids.p, static_cast<int64_t>(ids.size()), dout.p, nullptr);
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> want(ids.size() * dim, 0.0f);
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0 || ids[t] >= vocab) continue;
    for (int64_t i = 0; i < dim; ++i) want[t * dim + i] = table.f[ids[t] * dim + i];
  }
  expect_close(dout.download(), want, 0.0f, 0.0f, "embedding");
}

}  // namespace
}  // namespace tessera
