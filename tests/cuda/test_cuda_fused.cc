// The fused ops of the device forward pass (backend/cuda/fused_ops.h) against the sequences
// of CPU ops they replace, on the same inputs rounded to the element type (bf16 and f16: each
// test runs once per type).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/cuda/fused_ops.h"
#include "cuda/cuda_test_util.h"

namespace tessera {
namespace {

using cuda_test::round_to;

bool device_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

template <typename E>
std::vector<E> to_elems(const std::vector<float>& f) {
  std::vector<E> h(f.size());
  for (size_t i = 0; i < f.size(); ++i) h[i] = cuda_test::from_float<E>(f[i]);
  return h;
}

// Normal values already rounded to E.
template <typename E>
std::vector<float> random_values(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = round_to<E>(d(rng));
  return v;
}

template <typename T>
T* to_device(const std::vector<T>& v) {
  T* p = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(v.size(), 1) * sizeof(T));
  cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return p;
}

template <typename T>
std::vector<float> from_device(const T* p, size_t n) {
  std::vector<T> h(n);
  cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = cuda_test::to_float(h[i]);
  return f;
}

template <typename T>
class CudaFusedOps : public ::testing::Test {};
TYPED_TEST_SUITE(CudaFusedOps, cuda_test::ElemTypes, cuda_test::ElemTypeNames);

// Worst |a - b| / (|b| + floor) over the arrays.
double worst_relative(const std::vector<float>& a, const std::vector<float>& b, double floor) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]) / (std::fabs(b[i]) + floor));
  return worst;
}

struct QkvCase {
  int64_t num_heads, num_kv_heads, head_dim;
  bool bias, qk_norm;
  RopeLayout layout;
};

TYPED_TEST(CudaFusedOps, QkvRopeCacheEqualsBiasNormRopeAndCacheWrite) {
  using E = TypeParam;
  if (!device_present()) GTEST_SKIP() << "no CUDA device";
  std::mt19937 rng(7);
  for (const QkvCase& c : {QkvCase{32, 8, 128, false, false, RopeLayout::kHalf},
                           QkvCase{9, 3, 64, false, false, RopeLayout::kInterleaved},
                           QkvCase{4, 2, 16, true, false, RopeLayout::kHalf},
                           QkvCase{8, 4, 128, false, true, RopeLayout::kHalf},
                           QkvCase{6, 2, 256, true, true, RopeLayout::kInterleaved},
                           // head_dim / 16 not a power of two: the scalar kernel
                           QkvCase{4, 2, 96, true, true, RopeLayout::kHalf}}) {
    for (const int64_t n : {13, 77}) {  // a decode batch (a CTA per head) and a prefill batch (per token)
      const int64_t nh = c.num_heads, nkv = c.num_kv_heads, hd = c.head_dim;
      const int64_t heads = nh + 2 * nkv, kv_dim = nkv * hd, num_slots = 128;  // distinct slots for t < 128
      const float eps = 1e-5f;
      auto qkv = random_values<E>(n * heads * hd, rng);
      auto bias = random_values<E>(heads * hd, rng, 0.5f);
      auto qn = random_values<E>(hd, rng), kn = random_values<E>(hd, rng);
      std::vector<int32_t> positions(n);
      std::vector<int64_t> slots(n);
      for (int64_t t = 0; t < n; ++t) {
        positions[t] = static_cast<int32_t>(t * 977 % 40000);
        slots[t] = (t * 5 + 3) % num_slots;
      }
      std::vector<float> inv_freq(hd / 2);
      for (int64_t i = 0; i < hd / 2; ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * i / hd);

      // CPU: split, + bias, rounded to E (the GEMM output dtype), per-head norm, RoPE.
      std::vector<float> q(n * nh * hd), k(n * kv_dim), v(n * kv_dim);
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t h = 0; h < heads; ++h) {
          for (int64_t d = 0; d < hd; ++d) {
            float x = qkv[(t * heads + h) * hd + d] + (c.bias ? bias[h * hd + d] : 0.0f);
            if (!c.qk_norm || h >= nh + nkv) x = round_to<E>(x);
            if (h < nh) q[(t * nh + h) * hd + d] = x;
            else if (h < nh + nkv) k[(t * nkv + h - nh) * hd + d] = x;
            else v[(t * nkv + h - nh - nkv) * hd + d] = x;
          }
        }
      }
      if (c.qk_norm) {
        cpu::rms_norm(q.data(), qn.data(), eps, n * nh, hd, q.data());
        cpu::rms_norm(k.data(), kn.data(), eps, n * nkv, hd, k.data());
        for (float& x : q) x = round_to<E>(x);
        for (float& x : k) x = round_to<E>(x);
      }
      cpu::apply_rope(q.data(), positions.data(), n, nh, hd, inv_freq.data(), c.layout);
      cpu::apply_rope(k.data(), positions.data(), n, nkv, hd, inv_freq.data(), c.layout);
      std::vector<float> kc(num_slots * kv_dim, 0.0f), vc(num_slots * kv_dim, 0.0f);
      for (int64_t t = 0; t < n; ++t) {
        std::copy(k.begin() + t * kv_dim, k.begin() + (t + 1) * kv_dim, kc.begin() + slots[t] * kv_dim);
        std::copy(v.begin() + t * kv_dim, v.begin() + (t + 1) * kv_dim, vc.begin() + slots[t] * kv_dim);
      }

      E* dqkv = to_device(to_elems<E>(qkv));
      E* dbias = to_device(to_elems<E>(bias));
      E* dqn = to_device(to_elems<E>(qn));
      E* dkn = to_device(to_elems<E>(kn));
      int32_t* dpos = to_device(positions);
      int64_t* dslots = to_device(slots);
      float* dfreq = to_device(inv_freq);
      E* dq = to_device(std::vector<E>(q.size()));
      E* dkc = to_device(to_elems<E>(std::vector<float>(kc.size(), 0.0f)));
      E* dvc = to_device(to_elems<E>(std::vector<float>(vc.size(), 0.0f)));
      cuda::qkv_rope_cache(dqkv, c.bias ? dbias : nullptr, c.qk_norm ? dqn : nullptr, c.qk_norm ? dkn : nullptr, eps,
                           dpos, dslots, n, nh, nkv, hd, dfreq, c.layout, dq, dkc, dvc, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::string what = std::to_string(n) + " tokens, heads " + std::to_string(nh) + "/" +
                               std::to_string(nkv) + " head_dim " + std::to_string(hd) + (c.bias ? " bias" : "") +
                               (c.qk_norm ? " qk_norm" : "");
      EXPECT_LT(worst_relative(from_device(dq, q.size()), q, 0.05), 0.02) << "q, " << what;
      EXPECT_LT(worst_relative(from_device(dkc, kc.size()), kc, 0.05), 0.02) << "k cache, " << what;
      EXPECT_EQ(from_device(dvc, vc.size()), vc) << "v cache (bias add and rounding only), " << what;
      for (void* p : {static_cast<void*>(dqkv), static_cast<void*>(dbias), static_cast<void*>(dqn),
                      static_cast<void*>(dkn), static_cast<void*>(dpos), static_cast<void*>(dslots),
                      static_cast<void*>(dfreq), static_cast<void*>(dq), static_cast<void*>(dkc),
                      static_cast<void*>(dvc)}) {
        cudaFree(p);
      }
    }
  }
}

TYPED_TEST(CudaFusedOps, SiluAndMulFusedAndGatherRowsMatchCpu) {
  using E = TypeParam;
  if (!device_present()) GTEST_SKIP() << "no CUDA device";
  std::mt19937 rng(8);
  const int64_t n = 7, dim = 576;
  for (int64_t inter : {1536, 100}) {  // 16-byte pieces; the scalar kernel (inter % 8 != 0)
    SCOPED_TRACE("inter " + std::to_string(inter));
    auto gate_up = random_values<E>(n * 2 * inter, rng, 2.0f);
    std::vector<float> gate(n * inter), up(n * inter), want(n * inter);
    for (int64_t t = 0; t < n; ++t) {
      std::copy(gate_up.begin() + t * 2 * inter, gate_up.begin() + t * 2 * inter + inter, gate.begin() + t * inter);
      std::copy(gate_up.begin() + t * 2 * inter + inter, gate_up.begin() + (t + 1) * 2 * inter, up.begin() + t * inter);
    }
    cpu::silu_and_mul(gate.data(), up.data(), n, inter, want.data());
    E* dgu = to_device(to_elems<E>(gate_up));
    E* dout = to_device(std::vector<E>(n * inter));
    cuda::silu_and_mul_fused(dgu, n, inter, dout, nullptr);
    auto x = random_values<E>(n * dim, rng);
    const std::vector<int32_t> idx = {6, 0, 3, 3};
    E* dx = to_device(to_elems<E>(x));
    int32_t* didx = to_device(idx);
    E* dsel = to_device(std::vector<E>(idx.size() * dim));
    cuda::gather_rows(dx, didx, static_cast<int64_t>(idx.size()), dim, dsel, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_LT(worst_relative(from_device(dout, want.size()), want, 1e-3), cuda_test::rel_bound<E>());
    std::vector<float> sel_want;
    for (int32_t r : idx) sel_want.insert(sel_want.end(), x.begin() + r * dim, x.begin() + (r + 1) * dim);
    EXPECT_EQ(from_device(dsel, sel_want.size()), sel_want);
    for (void* p : {static_cast<void*>(dgu), static_cast<void*>(dout), static_cast<void*>(dx), static_cast<void*>(didx),
                    static_cast<void*>(dsel)}) {
      cudaFree(p);
    }
  }
}

}  // namespace
}  // namespace tessera
