// Speed of the CUDA ops on the Llama-3.1-8B shape (hidden 4096, 32 heads, 8 KV heads,
// head_dim 128, FFN 14336), timed with CUDA events over repeated launches: GEMM TFLOP/s
// for decode and prefill batches, decode attention time and the KV bandwidth it reaches
// (batch 1 .. 256, ctx 512 and 4096; caches under ~50 MB stay in L2 across the repeats, so
// theirs is L2 bandwidth), prefill attention steps (causal FLOPs; with the prefill plan, as
// the engine runs them, at 128 and 64 query rows per tile: 8 x 512, 1 x 2048, 4 x 1000 and a
// 512-token chunk after 1536 cached; 8 x 512 also token by token on the split-KV kernel),
// RMSNorm bandwidth. Run on the GPU
// machine (scripts/gpu-check.sh runs it); prints one line per case. Arguments pick sections
// (gemm, decode-gemm, attention, decode-attention, norm, rope; all without any). Random data: speed does
// not depend on the values.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cuda/fused_ops.h"
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

int main(int argc, char** argv) {
  auto want = [&](const char* section) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == section) return true;
    }
    return false;
  };
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
    if (!want("gemm")) break;
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

  // A decode step's GEMMs at the batch sizes of a throughput run (a few hundred sequences:
  // compute-bound), with the heuristic's pick and tuned (Gemm::set_tuning). The weights rotate
  // over copies of at least 256 MB in all, so none stays in L2 between launches.
  if (want("decode-gemm")) {
    tessera::cuda::Gemm tuned;
    tuned.set_tuning(tessera::cuda::Gemm::kTuneMaxRows);
    struct Shape {
      const char* name;
      int64_t k, m;
      int out;  // 0 bf16, 1 bf16 + residual, 2 fp32
    };
    const Shape shapes[] = {{"qkv", hidden, hidden + 2 * kv_heads * hd, 0},
                            {"o (+residual)", hidden, hidden, 1},
                            {"gate/up", hidden, 2 * ffn, 0},
                            {"down (+residual)", ffn, hidden, 1},
                            {"lm head (fp32)", hidden, 128256, 2}};
    for (const Shape& sh : shapes) {
      const int64_t wbytes = sh.m * sh.k * 2, copies = std::max<int64_t>(1, (int64_t{256} << 20) / wbytes + 1);
      bf16* w = device_random_tiled(static_cast<size_t>(copies * sh.m * sh.k), rng);
      for (int64_t n : {256, 344, 384, 448, 512}) {
        bf16* x = device_random<bf16>(n * sh.k, rng);
        void* out = nullptr;
        cudaMalloc(&out, n * sh.m * 4);
        cudaMemset(out, 0, n * sh.m * 4);
        double ms[2];
        for (int t = 0; t < 2; ++t) {
          tessera::cuda::Gemm& g = t == 0 ? gemm : tuned;
          int64_t i = 0;
          ms[t] = time_ms([&] {
            const bf16* wi = w + (i++ % copies) * sh.m * sh.k;
            if (sh.out == 0) g.matmul(x, wi, n, sh.k, sh.m, static_cast<bf16*>(out), nullptr);
            if (sh.out == 1) g.matmul_add(x, wi, n, sh.k, sh.m, static_cast<bf16*>(out), nullptr);
            if (sh.out == 2) g.matmul_f32(x, wi, n, sh.k, sh.m, static_cast<float*>(out), nullptr);
          });
        }
        const double flop = 2.0 * n * sh.k * sh.m;
        std::printf("decode gemm %-16s %3lld x %5lld x %6lld: heuristic %7.3f ms %6.1f TFLOP/s, "
                    "tuned %7.3f ms %6.1f TFLOP/s\n",
                    sh.name, static_cast<long long>(n), static_cast<long long>(sh.k), static_cast<long long>(sh.m),
                    ms[0], flop / (ms[0] * 1e-3) / 1e12, ms[1], flop / (ms[1] * 1e-3) / 1e12);
        cudaFree(x);
        cudaFree(out);
      }
      cudaFree(w);
    }
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
    if (!want("attention")) break;
    for (int64_t ctx : {512, 4096}) {
      if (2.0 * batch * ctx * kv_dim * sizeof(bf16) > 40e9) continue;  // the cache would not fit
      attention(batch, ctx, 1, 128);  // a decode step: no prefill tiles, so no plan
    }
  }
  if (want("attention") || want("decode-attention")) {
    attention(344, 1500, 1, 128);  // decode steps of the 1000 -> 1000 throughput run
    attention(448, 1500, 1, 128);
  }
  if (want("attention")) attention(8, 512, 512, 0);  // the split-KV kernel alone, for comparison
  for (int tile_rows : {128, 64}) {
    if (!want("attention")) break;
    attention(8, 512, 512, tile_rows);
    attention(1, 2048, 2048, tile_rows);
    attention(4, 1000, 1000, tile_rows);
    attention(1, 2048, 512, tile_rows);  // a chunked-prefill continuation: 512 new tokens after 1536 cached
  }

  // RMSNorm over a prefill batch.
  if (want("norm")) {
    const int64_t n = 4096;
    bf16* x = device_random<bf16>(n * hidden, rng);
    bf16* w = device_random<bf16>(hidden, rng);
    const double ms = time_ms([&] { tessera::cuda::rms_norm(x, w, 1e-5f, n, hidden, x, nullptr); });
    std::printf("rms_norm %lld x %lld: %8.3f ms  %7.0f GB/s\n", static_cast<long long>(n),
                static_cast<long long>(hidden), ms, 2.0 * n * hidden * 2 / (ms * 1e-3) / 1e9);
  }
  // q/k/v RoPE and cache write over a prefill batch (the 8B shape, rotate-half).
  if (want("rope")) {
    const int64_t n = 8192, qkv_dim = (heads + 2 * kv_heads) * hd;
    bf16* qkv = device_random<bf16>(n * qkv_dim, rng);
    bf16* q = device_random<bf16>(n * heads * hd, rng);
    bf16* kc = device_random<bf16>(n * kv_dim, rng);
    bf16* vc = device_random<bf16>(n * kv_dim, rng);
    std::vector<int32_t> pos(n);
    std::vector<int64_t> slots(n);
    std::vector<float> inv_freq(hd / 2);
    for (int64_t t = 0; t < n; ++t) pos[t] = static_cast<int32_t>(t % 1000), slots[t] = t;
    for (int64_t i = 0; i < hd / 2; ++i) inv_freq[i] = std::pow(500000.0f, -2.0f * i / hd);
    int32_t* dpos = nullptr;
    int64_t* dslots = nullptr;
    float* dfreq = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&dpos), n * sizeof(int32_t));
    cudaMalloc(reinterpret_cast<void**>(&dslots), n * sizeof(int64_t));
    cudaMalloc(reinterpret_cast<void**>(&dfreq), inv_freq.size() * sizeof(float));
    cudaMemcpy(dpos, pos.data(), n * sizeof(int32_t), cudaMemcpyHostToDevice);
    cudaMemcpy(dslots, slots.data(), n * sizeof(int64_t), cudaMemcpyHostToDevice);
    cudaMemcpy(dfreq, inv_freq.data(), inv_freq.size() * sizeof(float), cudaMemcpyHostToDevice);
    const double ms = time_ms([&] {
      tessera::cuda::qkv_rope_cache<tessera::cuda::bf16>(qkv, nullptr, nullptr, nullptr, 0.0f, dpos, dslots, n, heads, kv_heads, hd, dfreq,
                                    tessera::RopeLayout::kHalf, q, kc, vc, nullptr);
    });
    std::printf("qkv_rope_cache %lld tokens: %8.3f ms  %7.0f GB/s\n", static_cast<long long>(n), ms,
                2.0 * n * qkv_dim * 2 / (ms * 1e-3) / 1e9);
    for (void* p : {static_cast<void*>(qkv), static_cast<void*>(q), static_cast<void*>(kc), static_cast<void*>(vc),
                    static_cast<void*>(dpos), static_cast<void*>(dslots), static_cast<void*>(dfreq)}) {
      cudaFree(p);
    }
  }
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  return 0;
}
