// Helpers of the CUDA op tests (tests/cuda): 16-bit test data (bf16 or f16, the ops' element
// types) kept both ways, device buffers, and the elementwise bound the ops are held to against
// their fp32 CPU twins.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace tessera::cuda_test {

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << cudaGetErrorString(cudaGetLastError())

inline bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define REQUIRE_DEVICE() \
  if (!::tessera::cuda_test::have_device()) GTEST_SKIP() << "no CUDA device"

// Host conversions of the element types (round to nearest even).
inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
inline float to_float(__half x) { return __half2float(x); }
template <typename T>
T from_float(float f) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(f);
  } else {
    return __float2bfloat16(f);
  }
}
// f as stored in T and read back.
template <typename T>
float round_to(float f) {
  return to_float(from_float<T>(f));
}

// Random values rounded to T, kept both ways.
template <typename T>
struct ElemData {
  std::vector<T> h;
  std::vector<float> f;  // exactly the T values
  ElemData(size_t n, std::mt19937& rng, float scale = 1.0f) : h(n), f(n) {
    std::normal_distribution<float> d(0.0f, scale);
    for (size_t i = 0; i < n; ++i) {
      h[i] = from_float<T>(d(rng));
      f[i] = to_float(h[i]);
    }
  }
};
using Bf16Data = ElemData<__nv_bfloat16>;

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
template <typename T>
void expect_close(const std::vector<T>& gpu, const std::vector<float>& cpu, float rel, float abs,
                  const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size());
  size_t bad = 0, worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double diff = std::fabs(to_float(gpu[i]) - cpu[i]);
    const double bound = rel * std::fabs(cpu[i]) + abs;
    const double excess = std::isnan(diff) ? INFINITY : diff - bound;
    if (!(diff <= bound)) ++bad;
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": worst at " << worst << " gpu " << to_float(gpu[worst]) << " cpu "
                     << cpu[worst];
}

constexpr float kRel = 1.0f / 128;  // bf16 keeps 8 significant bits: rounding <= 2^-9 relative

// kRel of an element type: f16 keeps 11 significant bits (rounding <= 2^-12), held to 2^-10
// (accumulation-order noise in fp32 is well below it).
template <typename T>
constexpr float rel_bound() {
  return std::is_same_v<T, __half> ? 1.0f / 1024 : kRel;
}

// The element types of the typed op tests.
using ElemTypes = ::testing::Types<__nv_bfloat16, __half>;
struct ElemTypeNames {
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, __half> ? "f16" : "bf16";
  }
};

}  // namespace tessera::cuda_test
