// Helpers of the CUDA op tests (tests/cuda): bf16 test data kept both ways, device buffers,
// and the elementwise bound the ops are held to against their fp32 CPU twins.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace tessera::cuda_test {

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << cudaGetErrorString(cudaGetLastError())

inline bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define REQUIRE_DEVICE() \
  if (!::tessera::cuda_test::have_device()) GTEST_SKIP() << "no CUDA device"

// Random values rounded to bf16, kept both ways.
struct Bf16Data {
  std::vector<__nv_bfloat16> h;
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
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  std::vector<T> download() const {
    std::vector<T> v(n);
    cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
    return v;
  }
};

// |gpu - cpu| <= rel * |cpu| + abs for every element (a NaN fails); reports the worst.
inline void expect_close(const std::vector<__nv_bfloat16>& gpu, const std::vector<float>& cpu, float rel, float abs,
                         const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size());
  size_t bad = 0, worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double diff = std::fabs(__bfloat162float(gpu[i]) - cpu[i]);
    const double bound = rel * std::fabs(cpu[i]) + abs;
    const double excess = std::isnan(diff) ? INFINITY : diff - bound;
    if (!(diff <= bound)) ++bad;
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": worst at " << worst << " gpu " << __bfloat162float(gpu[worst]) << " cpu "
                     << cpu[worst];
}

constexpr float kRel = 1.0f / 128;  // bf16 keeps 8 significant bits: rounding <= 2^-9 relative

}  // namespace tessera::cuda_test
