// Speed of the fused decode GEMVs (backend/cuda/gemv.h) against cuBLASLt
// (backend/cuda/matmul.h) on the Llama-3.1-8B decode shapes (hidden 4096, q/k/v 6144, FFN
// 14336, vocab 128256) at n = 1, 2, 4, 8 tokens. Every number is device time per call from
// CUDA graph replays (as the engine runs decode), over 32 layers' own weights (8.4 GB in all,
// random), so no weight is in L2 from the call before. Prints:
//   per shape: each kernel variant (GemvOptions::variant), the default with PDL, cuBLASLt's
//     GEMM alone (without the norm / silu / add kernels it needs around it), ms and GB/s;
//   per n: the engine's two shapes (variant 0, kGemvBulkVariant) in f16 on each shape (the
//     same buffers read as f16: the speed does not depend on the values);
//   per n: the per-token sums 32 x (qkv + o + gate_up + down) + LM head of those;
//   per n: whole chains in one graph: the fused layer (4 GEMVs) x 32 + LM head, with and
//     without PDL, against the unfused one (norms, cuBLASLt GEMMs, silu) (attention and RoPE
//     left out of both), then the fused chain with PDL for each variant (the engine
//     runs variant 0 and, at up to 8 tokens, variant 5 as gemv.h's two shapes).
// `bench_gemv --profile [V]` instead launches, at n = 1 and without graphs, q/k/v, gate/up
// and down twice each as GEMV variant V (default 0) and twice as cuBLASLt (each on another
// layer's weights): twelve kernels for a profiler (ncu) to compare, nothing printed.
// bf16 throughout but for that f16 line. Run on the GPU machine.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/fused_ops.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/matmul.h"
#include "backend/cuda/ops.h"
#include "bench_util.h"
#include "gemv_sweep.h"
#include "llama8b_weights.h"

namespace {

namespace tc = tessera::cuda;
namespace sweep = tessera::cuda::sweep;
using tc::bf16;
using tc::f16;

using namespace tessera::bench;  // check, device_random, graph_ms; the 8B shape
using Model = Llama8BWeights;
constexpr int64_t kMaxN = 16;

struct Acts {
  bf16 *hidden, *branch, *q, *attn, *gate_up, *act;
  float* logits;
  int32_t* rows;
};

enum Op { kQkvOp, kOOp, kGateUpOp, kDownOp, kLmHeadOp, kNumOps };
const char* const kOpNames[] = {"qkv      6144 x 4096", "o        4096 x 4096", "gate_up 28672 x 4096",
                                "down    4096 x 14336", "lm_head 128256 x 4096"};

// Bytes an op moves at n tokens: weights, input rows, output (read + write for the adds).
double op_bytes(Op op, int64_t n) {
  switch (op) {
    case kQkvOp:
      return 2.0 * (kQkv * kHidden + n * kHidden + n * kQkv);
    case kOOp:
      return 2.0 * (kHidden * kHidden + n * kHidden + 2 * n * kHidden);
    case kGateUpOp:
      return 2.0 * (2 * kInter * kHidden + n * kHidden + n * kInter);
    case kDownOp:
      return 2.0 * (kHidden * kInter + n * kInter + 2 * n * kHidden);
    default:
      return 2.0 * (kVocab * kHidden + n * kHidden) + 4.0 * n * kVocab;
  }
}

// The fused kernel of op at layer l.
void run_fused(Op op, const Model& w, const Acts& a, int64_t n, int l, const tc::GemvOptions& opt,
               cudaStream_t stream) {
  switch (op) {
    case kQkvOp:
      check(sweep::gemv({a.hidden, nullptr, w.attn_norm, kEps}, w.qkv_w(l), n, kHidden, kQkv, a.q, stream, opt), "qkv");
      break;
    case kOOp:
      check(sweep::gemv_add({a.attn}, w.o_w(l), n, kHidden, kHidden, a.hidden, stream, opt), "o");
      break;
    case kGateUpOp:
      check(sweep::gemv_silu_mul({a.hidden, nullptr, w.ffn_norm, kEps}, w.gate_up_w(l), n, kHidden, kInter, a.act, stream,
                              opt),
            "gate_up");
      break;
    case kDownOp:
      check(sweep::gemv_add({a.act}, w.down_w(l), n, kInter, kHidden, a.hidden, stream, opt), "down");
      break;
    default:
      check(sweep::gemv_f32({a.hidden, a.rows, w.final_norm, kEps}, w.lm_head, n, kHidden, kVocab, a.logits, stream, opt),
            "lm_head");
  }
}

// The buffers as f16 (the f16 line: same bytes, other values).
const f16* h(const bf16* p) { return reinterpret_cast<const f16*>(p); }
f16* h(bf16* p) { return reinterpret_cast<f16*>(p); }

// The fused kernel of op at layer l in f16, through the engine's launchers (gemv.h).
void run_fused_f16(Op op, const Model& w, const Acts& a, int64_t n, int l, const tc::GemvOptions& opt,
                   cudaStream_t stream) {
  switch (op) {
    case kQkvOp:
      check(tc::gemv<f16>({h(a.hidden), nullptr, h(w.attn_norm), kEps}, h(w.qkv_w(l)), n, kHidden, kQkv, h(a.q), stream,
                          opt),
            "qkv f16");
      break;
    case kOOp:
      check(tc::gemv_add<f16>({h(a.attn)}, h(w.o_w(l)), n, kHidden, kHidden, h(a.hidden), stream, opt), "o f16");
      break;
    case kGateUpOp:
      check(tc::gemv_silu_mul<f16>({h(a.hidden), nullptr, h(w.ffn_norm), kEps}, h(w.gate_up_w(l)), n, kHidden, kInter,
                                   h(a.act), stream, opt),
            "gate_up f16");
      break;
    case kDownOp:
      check(tc::gemv_add<f16>({h(a.act)}, h(w.down_w(l)), n, kInter, kHidden, h(a.hidden), stream, opt), "down f16");
      break;
    default:
      check(tc::gemv_f32<f16>({h(a.hidden), a.rows, h(w.final_norm), kEps}, h(w.lm_head), n, kHidden, kVocab, a.logits,
                              stream, opt),
            "lm_head f16");
  }
}

// cuBLASLt's GEMM of op at layer l (alone).
void run_cublas(tc::Gemm& gemm, Op op, const Model& w, const Acts& a, int64_t n, int l, cudaStream_t stream) {
  switch (op) {
    case kQkvOp:
      check(gemm.matmul(a.branch, w.qkv_w(l), n, kHidden, kQkv, a.q, stream), "qkv");
      break;
    case kOOp:
      check(gemm.matmul(a.attn, w.o_w(l), n, kHidden, kHidden, a.branch, stream), "o");
      break;
    case kGateUpOp:
      check(gemm.matmul(a.branch, w.gate_up_w(l), n, kHidden, 2 * kInter, a.gate_up, stream), "gate_up");
      break;
    case kDownOp:
      check(gemm.matmul(a.act, w.down_w(l), n, kInter, kHidden, a.branch, stream), "down");
      break;
    default:
      check(gemm.matmul_f32(a.branch, w.lm_head, n, kHidden, kVocab, a.logits, stream), "lm_head");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool profile = argc > 1 && std::string(argv[1]) == "--profile";
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench_gemv: no CUDA device\n");
    return 1;
  }
  std::mt19937 rng(1);
  const Model w = random_llama8b_weights(rng);
  Acts a;
  a.hidden = device_random(kMaxN * kHidden, rng, 1.0f);
  a.branch = device_random(kMaxN * kHidden, rng, 1.0f);
  a.q = device_random(kMaxN * kQkv, rng, 1.0f);
  a.attn = device_random(kMaxN * kHidden, rng, 1.0f);
  a.gate_up = device_random(kMaxN * 2 * kInter, rng, 1.0f);
  a.act = device_random(kMaxN * kInter, rng, 1.0f);
  check(cudaMalloc(reinterpret_cast<void**>(&a.logits), kMaxN * kVocab * sizeof(float)), "cudaMalloc");
  {
    std::vector<int32_t> rows(kMaxN);
    for (int i = 0; i < kMaxN; ++i) rows[i] = i;
    check(cudaMalloc(reinterpret_cast<void**>(&a.rows), kMaxN * sizeof(int32_t)), "cudaMalloc");
    check(cudaMemcpy(a.rows, rows.data(), kMaxN * sizeof(int32_t), cudaMemcpyHostToDevice), "upload");
  }
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  tc::Gemm gemm;
  if (profile) {
    int layer = 0;
    for (Op op : {kQkvOp, kGateUpOp, kDownOp}) {
      const int v = argc > 2 ? std::atoi(argv[2]) : 0;
      for (int i = 0; i < 2; ++i) run_fused(op, w, a, 1, layer++, {false, v}, stream);
      for (int i = 0; i < 2; ++i) run_cublas(gemm, op, w, a, 1, layer++, stream);
    }
    check(cudaStreamSynchronize(stream), "profile");
    return 0;
  }
  const int variants = sweep::variant_count();
  std::printf("variants:");
  for (int v = 0; v < variants; ++v) {
    const tc::GemvVariant var = sweep::variant(v);
    if (var.bulk) {
      std::printf("  v%d = bulk %d-row tiles x %d stages", v, var.tile_rows, var.stages);
    } else {
      std::printf("  v%d = %d warps x %d stages", v, var.warps, var.stages);
    }
  }
  std::printf("\n");

  for (int64_t n : {1, 2, 4, 8}) {
    std::printf("\nn = %lld: us (GB/s)\n", static_cast<long long>(n));
    double sum_v0 = 0, sum_best = 0, sum_pdl = 0, sum_cublas = 0;
    for (int opi = 0; opi < kNumOps; ++opi) {
      const Op op = static_cast<Op>(opi);
      const int iters = op == kLmHeadOp ? 8 : kLayers;
      const int weight_copies = op == kLmHeadOp ? 1 : kLayers;
      auto show = [&](double ms) { std::printf(" %7.1f (%4.0f)", ms * 1e3, op_bytes(op, n) / (ms * 1e-3) / 1e9); };
      std::printf("  %-22s", kOpNames[op]);
      double best = 1e30;
      for (int v = 0; v < variants; ++v) {
        const double ms = graph_ms(stream, iters, [&](int i) {
          run_fused(op, w, a, n, i % weight_copies, {false, v}, stream);
        });
        show(ms);
        best = std::min(best, ms);
        if (v == 0) sum_v0 += op == kLmHeadOp ? ms : kLayers * ms;
      }
      const double pdl = graph_ms(stream, iters, [&](int i) {
        run_fused(op, w, a, n, i % weight_copies, {true, 0}, stream);
      });
      std::printf(" | pdl");
      show(pdl);
      const double cublas =
          graph_ms(stream, iters, [&](int i) { run_cublas(gemm, op, w, a, n, i % weight_copies, stream); });
      std::printf(" | cublasLt");
      show(cublas);
      std::printf("\n");
      const double layers = op == kLmHeadOp ? 1 : kLayers;
      sum_best += layers * best;
      sum_pdl += layers * pdl;
      sum_cublas += layers * cublas;
    }
    std::printf("  f16, engine v0 / v%d:", tc::kGemvBulkVariant);
    for (int opi = 0; opi < kNumOps; ++opi) {
      const Op op = static_cast<Op>(opi);
      const int iters = op == kLmHeadOp ? 8 : kLayers;
      const int weight_copies = op == kLmHeadOp ? 1 : kLayers;
      std::printf("  %.7s", kOpNames[op]);
      for (int v : {0, tc::kGemvBulkVariant}) {
        const double ms = graph_ms(stream, iters, [&](int i) {
          run_fused_f16(op, w, a, n, i % weight_copies, {false, v}, stream);
        });
        std::printf(" %.1f (%.0f)", ms * 1e3, op_bytes(op, n) / (ms * 1e-3) / 1e9);
      }
    }
    std::printf("\n");
    std::printf(
        "  per step (32 layers + lm_head), kernels timed alone: gemv v0 %.3f ms, best variant %.3f ms, "
        "v0+pdl %.3f ms, cuBLASLt GEMMs alone %.3f ms\n",
        sum_v0, sum_best, sum_pdl, sum_cublas);

    // Whole chains in one graph.
    auto fused_chain = [&](bool pdl, int v = 0) {
      return graph_ms(
          stream, 1,
          [&](int) {
            for (int l = 0; l < kLayers; ++l) {
              for (Op op : {kQkvOp, kOOp, kGateUpOp, kDownOp}) run_fused(op, w, a, n, l, {pdl, v}, stream);
            }
            run_fused(kLmHeadOp, w, a, n, 0, {pdl, v}, stream);
          },
          5);
    };
    const double fused = fused_chain(false), fused_pdl = fused_chain(true);
    const double unfused = graph_ms(
        stream, 1,
        [&](int) {
          for (int l = 0; l < kLayers; ++l) {
            tc::fused_add_rms_norm(a.branch, a.hidden, w.attn_norm, kEps, n, kHidden, stream);
            run_cublas(gemm, kQkvOp, w, a, n, l, stream);
            run_cublas(gemm, kOOp, w, a, n, l, stream);
            tc::fused_add_rms_norm(a.branch, a.hidden, w.ffn_norm, kEps, n, kHidden, stream);
            run_cublas(gemm, kGateUpOp, w, a, n, l, stream);
            tc::silu_and_mul_fused(a.gate_up, n, kInter, a.act, stream);
            run_cublas(gemm, kDownOp, w, a, n, l, stream);
          }
          tc::fused_add_rms_norm(a.branch, a.hidden, w.final_norm, kEps, n, kHidden, stream);
          tc::gather_rows(a.branch, a.rows, n, kHidden, a.attn, stream);
          check(gemm.matmul_f32(a.attn, w.lm_head, n, kHidden, kVocab, a.logits, stream), "lm_head");
        },
        5);
    const double weight_gb =
        2.0 * (kLayers * (kQkv + kHidden + 2 * kInter + kInter) * kHidden + kVocab * kHidden) / 1e9;
    std::printf(
        "  one graph, 32 layers + lm_head (no attention): fused %.3f ms (%.0f GB/s), fused+pdl %.3f ms "
        "(%.0f GB/s), unfused cuBLASLt + norms + silu %.3f ms (%.0f GB/s)\n",
        fused, weight_gb / fused * 1e3, fused_pdl, weight_gb / fused_pdl * 1e3, unfused, weight_gb / unfused * 1e3);
    std::printf("  the fused chain + pdl per variant:");
    for (int v = 0; v < variants; ++v) {
      const double ms = fused_chain(true, v);
      std::printf("  v%d %.3f ms (%.0f GB/s)", v, ms, weight_gb / ms * 1e3);
    }
    std::printf("\n");
  }
  check(cudaDeviceSynchronize(), "bench");
  return 0;
}
