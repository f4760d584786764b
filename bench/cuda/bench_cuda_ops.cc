// Speed of the CUDA ops on the Llama-3.1-8B shape (hidden 4096, 32 heads, 8 KV heads,
// head_dim 128, FFN 14336), timed with CUDA events over repeated launches: GEMM TFLOP/s
// for decode and prefill batches, decode attention time and the KV bandwidth it reaches,
// RMSNorm bandwidth. Run on the GPU machine (scripts/gpu-check.sh runs it); prints one line
// per case. Random data: speed does not depend on the values.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <functional>
#include <random>
#include <type_traits>
#include <vector>

#include "backend/cuda/matmul.h"
#include "backend/cuda/ops.h"

namespace {

using tessera::cuda::bf16;

template <typename T>
T* device_random(size_t n, std::mt19937& rng) {
  std::vector<T> h(n);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (auto& x : h) x = static_cast<T>(d(rng));
  T* p = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(T));
  cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice);
  return p;
}

// Mean milliseconds of fn over `iters` launches after a warm-up.
double time_ms(const std::function<void()>& fn, int iters = 50) {
  for (int i = 0; i < 3; ++i) fn();
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a);
  for (int i = 0; i < iters; ++i) fn();
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / iters;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench_cuda_ops: no CUDA device\n");
    return 1;
  }
  std::mt19937 rng(1);
  tessera::cuda::Gemm gemm;
  const int64_t hidden = 4096, ffn = 14336, heads = 32, kv_heads = 8, hd = 128;

  // GEMMs: the gate/up projection (hidden -> 2 x ffn) at decode and prefill batch sizes.
  for (int64_t n : {1, 8, 64, 512, 4096}) {
    const int64_t k = hidden, m = 2 * ffn;
    bf16* x = device_random<bf16>(n * k, rng);
    bf16* w = device_random<bf16>(m * k, rng);
    bf16* out = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&out), n * m * sizeof(bf16));
    const double ms = time_ms([&] { gemm.matmul(x, w, n, k, m, out, nullptr); });
    const double tflops = 2.0 * n * k * m / (ms * 1e-3) / 1e12;
    const double gbs = (m * k + n * k + n * m) * 2.0 / (ms * 1e-3) / 1e9;
    std::printf("gemm %5lld x %lld x %lld: %8.3f ms  %7.1f TFLOP/s  %7.0f GB/s\n", static_cast<long long>(n),
                static_cast<long long>(k), static_cast<long long>(m), ms, tflops, gbs);
    cudaFree(x);
    cudaFree(w);
    cudaFree(out);
  }

  // Decode attention: `batch` sequences of `ctx` keys, one query token each.
  const int64_t block = 16;
  for (int64_t batch : {1, 8, 64}) {
    for (int64_t ctx : {1024, 4096}) {
      const int64_t blocks_per_seq = ctx / block, num_blocks = batch * blocks_per_seq + 1;
      const int64_t kv_dim = kv_heads * hd;
      bf16* kc = device_random<bf16>(num_blocks * block * kv_dim, rng);
      bf16* vc = device_random<bf16>(num_blocks * block * kv_dim, rng);
      bf16* q = device_random<bf16>(batch * heads * hd, rng);
      bf16* out = nullptr;
      cudaMalloc(reinterpret_cast<void**>(&out), batch * heads * hd * sizeof(bf16));
      std::vector<int32_t> pos(batch, static_cast<int32_t>(ctx - 1)), seq(batch), indptr(batch + 1), ids;
      std::vector<int64_t> slots(batch);
      for (int64_t s = 0; s < batch; ++s) {
        seq[s] = static_cast<int32_t>(s);
        indptr[s] = static_cast<int32_t>(ids.size());
        for (int64_t b = 0; b < blocks_per_seq; ++b) ids.push_back(static_cast<int32_t>(1 + s * blocks_per_seq + b));
        slots[s] = int64_t{ids.back()} * block + block - 1;
      }
      indptr[batch] = static_cast<int32_t>(ids.size());
      auto upload = [](const auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        T* p = nullptr;
        cudaMalloc(reinterpret_cast<void**>(&p), v.size() * sizeof(T));
        cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
        return p;
      };
      tessera::cuda::AttentionMetadata meta{upload(pos), upload(seq), upload(slots), upload(indptr), upload(ids), batch};
      tessera::cuda::AttentionShape shape{heads, kv_heads, hd, block, 1.0f / 11.3137f, 0};
      const double ms = time_ms([&] { tessera::cuda::paged_attention(q, kc, vc, meta, shape, out, nullptr); }, 20);
      const double kv_bytes = 2.0 * batch * ctx * kv_dim * sizeof(bf16);
      std::printf("decode attention batch %3lld ctx %5lld: %8.3f ms  %7.0f GB/s of KV (once per KV head)\n",
                  static_cast<long long>(batch), static_cast<long long>(ctx), ms, kv_bytes / (ms * 1e-3) / 1e9);
      cudaFree(kc);
      cudaFree(vc);
      cudaFree(q);
      cudaFree(out);
    }
  }

  // RMSNorm over a prefill batch.
  {
    const int64_t n = 4096;
    bf16* x = device_random<bf16>(n * hidden, rng);
    bf16* w = device_random<bf16>(hidden, rng);
    const double ms = time_ms([&] { tessera::cuda::rms_norm(x, w, 1e-5f, n, hidden, x, nullptr); });
    std::printf("rms_norm %lld x %lld: %8.3f ms  %7.0f GB/s\n", static_cast<long long>(n),
                static_cast<long long>(hidden), ms, 2.0 * n * hidden * 2 / (ms * 1e-3) / 1e9);
  }
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  return 0;
}
