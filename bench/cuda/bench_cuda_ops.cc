// Speed of the CUDA ops on the Llama-3.1-8B shape (hidden 4096, 32 heads, 8 KV heads,
// head_dim 128, FFN 14336), timed with CUDA events over repeated launches: GEMM TFLOP/s
// for decode and prefill batches, decode attention time and the KV bandwidth it reaches
// (batch 1 .. 256, ctx 512 and 4096; caches under ~50 MB stay in L2 across the repeats, so
// theirs is L2 bandwidth), prefill attention steps (causal FLOPs; with the prefill plan, as
// the engine runs them, at 128 and 64 query rows per tile: 8 x 512, 1 x 2048, 4 x 1000 and a
// 512-token chunk after 1536 cached; 8 x 512 also token by token on the split-KV kernel),
// RMSNorm bandwidth. Run on the GPU
// machine (scripts/gpu-check.sh runs it); prints one line per case. Random data: speed does
// not depend on the values.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
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

// n random bf16 values on the device, a 16M-value random tile repeated (filling GBs of KV
// cache from one host RNG would take minutes; speed does not depend on the values).
tessera::cuda::bf16* device_random_tiled(size_t n, std::mt19937& rng) {
  const size_t tile = std::min<size_t>(n, size_t{1} << 24);
  std::vector<tessera::cuda::bf16> h(tile);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (auto& x : h) x = static_cast<tessera::cuda::bf16>(d(rng));
  tessera::cuda::bf16* p = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(tessera::cuda::bf16));
  for (size_t i = 0; i < n; i += tile) {
    cudaMemcpy(p + i, h.data(), std::min(tile, n - i) * sizeof(tessera::cuda::bf16), cudaMemcpyHostToDevice);
  }
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

  // Paged attention as the engine calls it: splits from attention_num_splits (a function of
  // the batch and max_model_len only, as under CUDA graphs), the workspace they need.
  int num_sms = 0;
  cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, 0);
  const int64_t block = 16, kv_dim = kv_heads * hd, max_model_len = 8192;
  // `seqs` sequences of `ctx` keys each, the last `new_tokens` of them this step's queries;
  // tile_rows 128 or 64: the prefill plan (plan_attention) as the engine builds it for eager
  // steps, with tiles of that many query rows; 0: no plan (every token split-KV).
  auto attention = [&](int64_t seqs, int64_t ctx, int64_t new_tokens, int tile_rows) {
    const int64_t blocks_per_seq = (ctx + block - 1) / block, num_blocks = seqs * blocks_per_seq + 1;
    const int64_t tokens = seqs * new_tokens;
    bf16* kc = device_random_tiled(num_blocks * block * kv_dim, rng);
    bf16* vc = device_random_tiled(num_blocks * block * kv_dim, rng);
    bf16* q = device_random<bf16>(tokens * heads * hd, rng);
    bf16* out = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&out), tokens * heads * hd * sizeof(bf16));
    std::vector<int32_t> pos, seq, indptr(seqs + 1), ids, query_start_loc(seqs + 1);
    for (int64_t s = 0; s < seqs; ++s) {
      indptr[s] = static_cast<int32_t>(ids.size());
      query_start_loc[s] = static_cast<int32_t>(pos.size());
      for (int64_t b = 0; b < blocks_per_seq; ++b) ids.push_back(static_cast<int32_t>(1 + s * blocks_per_seq + b));
      for (int64_t i = ctx - new_tokens; i < ctx; ++i) {
        pos.push_back(static_cast<int32_t>(i));
        seq.push_back(static_cast<int32_t>(s));
      }
    }
    indptr[seqs] = static_cast<int32_t>(ids.size());
    query_start_loc[seqs] = static_cast<int32_t>(pos.size());
    std::vector<int32_t> plan(tessera::cuda::attention_plan_ints(tokens));
    const tessera::cuda::AttentionPlanCounts counts =
        tessera::cuda::plan_attention(pos.data(), query_start_loc.data(), seqs, heads, kv_heads, hd, plan.data(),
                                      tile_rows > 0 ? tile_rows : 128);
    auto upload = [](const auto& v) {
      using T = typename std::decay_t<decltype(v)>::value_type;
      T* p = nullptr;
      cudaMalloc(reinterpret_cast<void**>(&p), v.size() * sizeof(T));
      cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
      return p;
    };
    int32_t *dpos = upload(pos), *dseq = upload(seq), *dindptr = upload(indptr), *dids = upload(ids);
    int32_t* dplan = upload(plan);
    tessera::cuda::AttentionMetadata meta{dpos, dseq, nullptr, dindptr, dids, tokens};
    if (tile_rows > 0 && counts.prefill_tiles > 0) {
      meta.plan = dplan, meta.plan_decode_tokens = counts.decode_tokens, meta.plan_prefill_tiles = counts.prefill_tiles;
      meta.plan_tile_rows = counts.tile_rows;
    }
    tessera::cuda::AttentionShape shape{heads, kv_heads, hd, block, 1.0f / 11.3137f, 0};
    const int splits = tessera::cuda::attention_num_splits(tokens, kv_heads, num_sms, max_model_len);
    void* ws = nullptr;
    const size_t ws_bytes = tessera::cuda::attention_workspace_bytes(tokens, heads, hd, splits);
    if (ws_bytes > 0) {
      cudaMalloc(&ws, ws_bytes);
      cudaMemset(ws, 0, ws_bytes);  // the split merge's arrival counts start at zero
    }
    const double ms =
        time_ms([&] { tessera::cuda::paged_attention(q, kc, vc, meta, shape, splits, ws, out, nullptr); }, 20);
    if (new_tokens == 1) {
      const double kv_bytes = 2.0 * seqs * ctx * kv_dim * sizeof(bf16);
      std::printf("decode attention batch %3lld ctx %5lld: %8.3f ms  %7.0f GB/s of KV (once per KV head), %d splits\n",
                  static_cast<long long>(seqs), static_cast<long long>(ctx), ms, kv_bytes / (ms * 1e-3) / 1e9, splits);
    } else {
      // Causal: query i of the new tokens sees ctx - new_tokens + i + 1 keys; 4 flops per (key, dim).
      double keys = 0;
      for (int64_t i = 0; i < new_tokens; ++i) keys += static_cast<double>(ctx - new_tokens + i + 1);
      const double flops = 4.0 * seqs * keys * heads * hd;
      std::printf("prefill attention %lld x %lld new tokens (ctx %lld): %8.3f ms  %6.1f TFLOP/s, %s\n",
                  static_cast<long long>(seqs), static_cast<long long>(new_tokens), static_cast<long long>(ctx), ms,
                  flops / (ms * 1e-3) / 1e12,
                  meta.plan != nullptr ? (std::to_string(counts.prefill_tiles) + " prefill tiles of " +
                                          std::to_string(counts.tile_rows) + " rows").c_str()
                                       : (std::to_string(splits) + " splits, token by token").c_str());
    }
    for (void* p : {static_cast<void*>(kc), static_cast<void*>(vc), static_cast<void*>(q), static_cast<void*>(out),
                    static_cast<void*>(dpos), static_cast<void*>(dseq), static_cast<void*>(dindptr),
                    static_cast<void*>(dids), static_cast<void*>(dplan), ws}) {
      cudaFree(p);
    }
  };
  for (int64_t batch : {1, 8, 64, 256}) {
    for (int64_t ctx : {512, 4096}) {
      if (2.0 * batch * ctx * kv_dim * sizeof(bf16) > 40e9) continue;  // the cache would not fit
      attention(batch, ctx, 1, 128);  // a decode step: no prefill tiles, so no plan
    }
  }
  attention(8, 512, 512, 0);  // the split-KV kernel alone, for comparison
  for (int tile_rows : {128, 64}) {
    attention(8, 512, 512, tile_rows);
    attention(1, 2048, 2048, tile_rows);
    attention(4, 1000, 1000, tile_rows);
    attention(1, 2048, 512, tile_rows);  // a chunked-prefill continuation: 512 new tokens after 1536 cached
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
