// Where a decode step's time goes beside the weight stream: the engine's decode step of the
// Llama-3.1-8B shape (32 layers: q/k/v GEMV, qkv_rope_cache, paged_attention, o GEMV,
// gate/up GEMV, down GEMV; then the LM head GEMV and greedy sampling) at n sequences of
// context C, as one CUDA graph with the engine's launches (programmatic dependent launch,
// the bulk GEMVs at up to 8 tokens, attention_num_splits), against the same step with
// pieces left out:
//   full      the whole step
//   no attn   without paged_attention (q/k/v, RoPE + cache write, o, MLP)
//   gemvs     without RoPE and attention (the weight stream alone)
//   1 split   the whole step with one attention split per token
//   fused     the whole step with RoPE and the K/V write in the attention kernel
//             (rope_paged_attention, as the engine runs decode steps)
// and, as differences, the cost of RoPE and of attention per layer in place. Every layer has
// its own weights and KV cache (nothing stays in L2 from one layer to the next). Prints one
// line per (n, C). Run on the GPU machine: `bench_decode_layer [n ...]` (default 1 8).
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "backend/cuda/fused_ops.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/ops.h"
#include "bench_util.h"
#include "llama8b_weights.h"

namespace {

namespace tc = tessera::cuda;
using tc::bf16;

using namespace tessera::bench;  // check, device_random, graph_ms; the 8B shape
using Weights = Llama8BWeights;
constexpr int64_t kKvDim = kKvHeads * kHeadDim, kBlock = 16, kMaxContext = 4096;

// The device state of a decode step of n sequences, each at position `context` (so it sees
// context + 1 keys): per-layer KV caches, the step's metadata, activations.
struct Step {
  int64_t n = 0, blocks_per_seq = 0;
  bf16* k_cache[kLayers] = {};
  bf16* v_cache[kLayers] = {};
  tc::AttentionMetadata meta;
  float* inv_freq = nullptr;
  int32_t* rows = nullptr;
  bf16 *hidden = nullptr, *qkv = nullptr, *q = nullptr, *attn = nullptr, *act = nullptr;
  float* logits = nullptr;
  int32_t* next = nullptr;
  char* workspace = nullptr;
  int splits = 1;

  Step(int64_t tokens, int64_t context, std::mt19937& rng) : n(tokens) {
    blocks_per_seq = (context + 1 + kBlock - 1) / kBlock;
    const int64_t blocks = 1 + n * blocks_per_seq;  // block 0: the null block
    for (int l = 0; l < kLayers; ++l) {
      k_cache[l] = device_random(blocks * kBlock * kKvDim, rng, 1.0f);
      v_cache[l] = device_random(blocks * kBlock * kKvDim, rng, 1.0f);
    }
    std::vector<int32_t> positions(n, static_cast<int32_t>(context)), token_seq(n), indptr(n + 1), ids;
    std::vector<int64_t> slots(n);
    for (int64_t s = 0; s < n; ++s) {
      token_seq[s] = static_cast<int32_t>(s);
      indptr[s] = static_cast<int32_t>(s * blocks_per_seq);
      for (int64_t b = 0; b < blocks_per_seq; ++b) ids.push_back(static_cast<int32_t>(1 + s * blocks_per_seq + b));
      slots[s] = (1 + s * blocks_per_seq + context / kBlock) * kBlock + context % kBlock;
    }
    indptr[n] = static_cast<int32_t>(n * blocks_per_seq);
    meta.positions = device_copy(positions);
    meta.token_seq = device_copy(token_seq);
    meta.slot_mapping = device_copy(slots);
    meta.block_table_indptr = device_copy(indptr);
    meta.block_table_ids = device_copy(ids);
    meta.num_tokens = n;
    std::vector<float> freq(kHeadDim / 2);
    for (int64_t i = 0; i < kHeadDim / 2; ++i) freq[i] = std::pow(500000.0f, -2.0f * i / kHeadDim);
    inv_freq = device_copy(freq);
    std::vector<int32_t> row_ids(n);
    for (int64_t i = 0; i < n; ++i) row_ids[i] = static_cast<int32_t>(i);
    rows = device_copy(row_ids);
    hidden = device_random(n * kHidden, rng, 1.0f);
    qkv = device_random(n * kQkv, rng, 1.0f);
    q = device_random(n * kHeads * kHeadDim, rng, 1.0f);
    attn = device_random(n * kHidden, rng, 1.0f);
    act = device_random(n * kInter, rng, 1.0f);
    check(cudaMalloc(reinterpret_cast<void**>(&logits), n * kVocab * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(reinterpret_cast<void**>(&next), n * sizeof(int32_t)), "cudaMalloc");
    int device = 0, sms = 0;
    check(cudaGetDevice(&device), "device");
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SMs");
    splits = tc::attention_num_splits(n, kKvHeads, sms, kMaxContext);
    const size_t bytes = tc::attention_workspace_bytes(n, kHeads, kHeadDim, splits);
    check(cudaMalloc(reinterpret_cast<void**>(&workspace), std::max<size_t>(bytes, 1)), "cudaMalloc");
    check(cudaMemset(workspace, 0, std::max<size_t>(bytes, 1)), "workspace");  // the arrival counts
  }
};

enum Parts { kGemvs = 0, kRope = 1, kAttention = 2, kAll = kRope | kAttention, kFused = 4 };

// One decode step as the engine runs it, with the parts asked for.
void decode_step(const Weights& w, Step& s, int parts, int splits, cudaStream_t stream) {
  const int64_t n = s.n;
  const bool bulk = n <= 8;
  const tc::GemvOptions opt{.pdl = true, .variant = bulk ? tc::kGemvBulkVariant : 0};
  const tc::AttentionShape shape{kHeads, kKvHeads, kHeadDim, kBlock, 1.0f / std::sqrt(static_cast<float>(kHeadDim))};
  for (int l = 0; l < kLayers; ++l) {
    check(tc::gemv({s.hidden, nullptr, w.attn_norm, kEps}, w.qkv_w(l), n, kHidden, kQkv, s.qkv, stream, opt), "qkv");
    if (parts & kFused) {
      const tc::QkvRope<tc::bf16> rope{nullptr, nullptr, nullptr, kEps, s.inv_freq, tessera::RopeLayout::kHalf};
      tc::rope_paged_attention(s.qkv, rope, s.meta, shape, splits, splits > 1 ? s.workspace : nullptr, s.q,
                               s.k_cache[l], s.v_cache[l], s.attn, stream);
    }
    if (parts & kRope) {
      tc::qkv_rope_cache<tc::bf16>(s.qkv, nullptr, nullptr, nullptr, kEps, s.meta.positions, s.meta.slot_mapping, n, kHeads,
                         kKvHeads, kHeadDim, s.inv_freq, tessera::RopeLayout::kHalf, s.q, s.k_cache[l], s.v_cache[l],
                         stream);
    }
    if (parts & kAttention) {
      tc::paged_attention(s.q, s.k_cache[l], s.v_cache[l], s.meta, shape, splits, splits > 1 ? s.workspace : nullptr,
                          s.attn, stream);
    }
    check(tc::gemv_add({s.attn}, w.o_w(l), n, kHidden, kHidden, s.hidden, stream, opt), "o");
    check(tc::gemv_silu_mul({s.hidden, nullptr, w.ffn_norm, kEps}, w.gate_up_w(l), n, kHidden, kInter,
                            s.act, stream, opt),
          "gate_up");
    check(tc::gemv_add({s.act}, w.down_w(l), n, kInter, kHidden, s.hidden, stream, opt), "down");
  }
  check(tc::gemv_f32({s.hidden, s.rows, w.final_norm, kEps}, w.lm_head, n, kHidden, kVocab, s.logits, stream, opt), "head");
  tc::greedy_sample(s.logits, n, kVocab, s.next, nullptr, stream);
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench_decode_layer: no CUDA device\n");
    return 1;
  }
  std::vector<int64_t> batches;
  for (int i = 1; i < argc; ++i) batches.push_back(std::atoll(argv[i]));
  if (batches.empty()) batches = {1, 8};
  std::mt19937 rng(1);
  const Weights w = random_llama8b_weights(rng);
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  std::printf("decode step, 8B shape, ms (per layer: RoPE + cache write, attention, in place)\n");
  for (int64_t n : batches) {
    for (int64_t context : {128, 384, 1024}) {
      Step s(n, context, rng);
      auto time = [&](int parts, int splits) {
        return graph_ms(stream, 1, [&](int) { decode_step(w, s, parts, splits, stream); }, 20);
      };
      const double full = time(kAll, s.splits), no_attn = time(kRope, s.splits), gemvs = time(kGemvs, s.splits);
      const double one_split = time(kAll, 1), fused = time(kFused, s.splits);
      std::printf(
          "  n %3lld context %5lld: full %.3f  no attn %.3f  gemvs %.3f  1 split %.3f (grid splits %d)  fused %.3f | "
          "RoPE %.1f us, attention %.1f us, fused RoPE + attention %.1f us per layer\n",
          static_cast<long long>(n), static_cast<long long>(context), full, no_attn, gemvs, one_split, s.splits, fused,
          (no_attn - gemvs) * 1e3 / kLayers, (full - no_attn) * 1e3 / kLayers, (fused - gemvs) * 1e3 / kLayers);
      for (int l = 0; l < kLayers; ++l) {
        cudaFree(s.k_cache[l]);
        cudaFree(s.v_cache[l]);
      }
    }
  }
  check(cudaDeviceSynchronize(), "bench");
  return 0;
}
