// cuda::paged_attention (split-KV, GQA-grouped, tensor cores) against its CPU twin
// cpu::paged_attention on the same 16-bit caches, for each element type (bf16 and fp16: typed
// tests): mixed steps of prefill chunks, chunked-prefill continuations and decodes at
// contexts 1 .. 4100, every case at several split counts, with
// NaN in every cache slot no token may see and in the workspace and output before the call
// (a read of either shows up as a NaN); each step with the prefill plan (plan_attention: runs
// of prefill tokens in the tiled prefill kernel) and without it (every token split-KV). Long
// prefill runs (1 .. 600 tokens, a 512-token chunk after 1536 cached) over GQA groups 1 .. 8,
// 3 and windows. Also a captured CUDA graph replayed after the contexts changed, and the
// host-side split, workspace and plan sizing (runs without a device).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/cuda/fused_ops.h"
#include "backend/cuda/ops.h"
#include "cuda/cuda_test_util.h"
#include "backend/forward_batch.h"

namespace tessera {
namespace {

using cuda::bf16;
using cuda::f16;
using namespace cuda_test;  // NOLINT(google-build-using-namespace): the test helpers

template <typename T>
std::string elem_name() {
  return std::is_same_v<T, bf16> ? "bf16" : "f16";
}

// The element types the device ops run: each typed test below runs once per type
// (CudaAttention/bf16.*, CudaAttention/f16.*).
template <typename T>
class CudaAttention : public ::testing::Test {};
TYPED_TEST_SUITE(CudaAttention, ElemTypes, ElemTypeNames);

constexpr int64_t kMaxContext = 4100;

struct AttentionCase {
  int64_t num_heads, num_kv_heads, head_dim, block_size, sliding_window;
};

struct Seq {
  int32_t start, n;  // this step's tokens are positions [start, start + n)
};

// Prefill first chunks and continuations of chunked prefills, mixed with decodes at contexts
// 1, 17, 100, 701, 1501 and 4100.
const std::vector<Seq> kMixed = {{0, 37}, {40, 20}, {0, 1},   {16, 1},   {99, 1},
                                 {700, 1}, {1500, 1}, {4099, 1}, {190, 70}};
// Decodes only: few CTAs per split, so attention_num_splits gives many splits.
const std::vector<Seq> kDecodes = {{4099, 1}, {0, 1}, {16, 1}, {99, 1}, {700, 1}, {1500, 1}};
// Long prefill runs for the tiled prefill kernel: a 600-token prompt, runs just below and at
// the 16-token threshold, 129 tokens (a partial last tile), a 512-token chunk after 1536
// cached, a short continuation, and decodes beside them.
const std::vector<Seq> kLong = {{0, 600}, {0, 1}, {0, 16}, {0, 15}, {0, 129}, {1536, 512}, {2047, 1}, {300, 37}};

// A step's batch over block tables drawn from a shuffled pool of blocks 1 .. total_blocks - 1
// (block 0 stays the null block).
struct Step {
  ForwardBatch batch;
  std::vector<int32_t> token_seq;
};

int64_t blocks_needed(const std::vector<Seq>& seqs, int64_t block_size) {
  int64_t n = 1;
  for (const Seq& s : seqs) n += (s.start + s.n + block_size - 1) / block_size;
  return n;
}

Step make_step(const std::vector<Seq>& seqs, int64_t block_size, int64_t total_blocks, std::mt19937& rng) {
  std::vector<int32_t> pool(total_blocks - 1);
  for (size_t i = 0; i < pool.size(); ++i) pool[i] = static_cast<int32_t>(i + 1);
  std::shuffle(pool.begin(), pool.end(), rng);
  Step step;
  size_t next = 0;
  for (size_t si = 0; si < seqs.size(); ++si) {
    const Seq& s = seqs[si];
    std::vector<int32_t> table;
    for (int64_t b = 0; b < (s.start + s.n + block_size - 1) / block_size; ++b) table.push_back(pool[next++]);
    std::vector<int32_t> tokens(s.n, 1);
    step.batch.add_sequence(tokens.data(), s.n, s.start, table, block_size, true);
    for (int32_t k = 0; k < s.n; ++k) step.token_seq.push_back(static_cast<int32_t>(si));
  }
  return step;
}

// NaN in every cache row no token of the step may see: past each sequence's end in its last
// block, and all the blocks no table holds.
template <typename T>
void poison_unseen(const Step& step, int64_t block_size, int64_t kv_dim, ElemData<T>& cache) {
  const int64_t slots = static_cast<int64_t>(cache.f.size()) / kv_dim;
  std::vector<bool> seen(slots, false);
  const ForwardBatch& b = step.batch;
  for (int64_t s = 0; s < b.num_seqs(); ++s) {
    const int32_t* table = b.block_table_ids.data() + b.block_table_indptr[s];
    for (int32_t p = 0; p < b.seq_lens[s]; ++p) {
      seen[int64_t{table[p / block_size]} * block_size + p % block_size] = true;
    }
  }
  const T nan = from_float<T>(std::numeric_limits<float>::quiet_NaN());
  for (int64_t slot = 0; slot < slots; ++slot) {
    if (seen[slot]) continue;
    for (int64_t i = slot * kv_dim; i < (slot + 1) * kv_dim; ++i) {
      cache.h[i] = nan;
      cache.f[i] = std::numeric_limits<float>::quiet_NaN();
    }
  }
}

int num_sms() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  return sms;
}

std::string describe(const AttentionCase& c, const std::string& name, int splits) {
  return "paged_attention heads " + std::to_string(c.num_heads) + "/" + std::to_string(c.num_kv_heads) + " head_dim " +
         std::to_string(c.head_dim) + " block " + std::to_string(c.block_size) + " window " +
         std::to_string(c.sliding_window) + " " + name + " splits " + std::to_string(splits);
}

// E: the element type (T is the step's token count here).
template <typename E>
void check_paged_attention(const AttentionCase& c, const std::vector<Seq>& seqs, uint32_t seed,
                           const std::vector<int>& split_counts = {1, 3, 32}) {
  const std::string name = elem_name<E>() + (&seqs == &kMixed     ? " mixed"
                                             : &seqs == &kDecodes ? " decodes"
                                             : &seqs == &kLong    ? " long runs"
                                                                  : " long decodes");
  std::mt19937 rng(seed);
  const int64_t total_blocks = blocks_needed(seqs, c.block_size) + 3;  // a few blocks no table holds
  const Step step = make_step(seqs, c.block_size, total_blocks, rng);
  const ForwardBatch& batch = step.batch;
  const int64_t T = batch.num_tokens(), kv_dim = c.num_kv_heads * c.head_dim;
  const int64_t q_size = T * c.num_heads * c.head_dim;
  // Old keys/values everywhere, then this step's written over their slots.
  ElemData<E> kc(total_blocks * c.block_size * kv_dim, rng), vc(total_blocks * c.block_size * kv_dim, rng);
  ElemData<E> q(q_size, rng), k(T * kv_dim, rng), v(T * kv_dim, rng);
  poison_unseen(step, c.block_size, kv_dim, kc);
  poison_unseen(step, c.block_size, kv_dim, vc);
  cpu::AttentionShape cs{c.num_heads, c.num_kv_heads, c.head_dim, c.block_size,
                         1.0f / std::sqrt(static_cast<float>(c.head_dim)), c.sliding_window};
  std::vector<float> kcache = kc.f, vcache = vc.f, want(q_size);
  cpu::write_kv_cache(k.f.data(), v.f.data(), batch, kv_dim, kcache.data(), vcache.data());
  cpu::paged_attention(q.f.data(), kcache.data(), vcache.data(), batch, cs, want.data());
  std::vector<E> kc_written = kc.h;
  for (int64_t t = 0; t < T; ++t) {
    std::memcpy(&kc_written[batch.slot_mapping[t] * kv_dim], &k.h[t * kv_dim], kv_dim * sizeof(E));
  }

  DeviceBuffer<E> dkc(kc.h), dvc(vc.h), dq(q.h), dk(k.h), dv(v.h), dout(q_size);
  DeviceBuffer<int32_t> dpos(batch.positions), dseq(step.token_seq), dindptr(batch.block_table_indptr),
      dids(batch.block_table_ids);
  DeviceBuffer<int64_t> dslots(batch.slot_mapping);
  cuda::AttentionMetadata meta{dpos.p, dseq.p, dslots.p, dindptr.p, dids.p, T};
  cuda::AttentionShape gs{cs.num_heads, cs.num_kv_heads, cs.head_dim, cs.block_size, cs.scale, cs.sliding_window};
  // The prefill plan at both tile sizes (128 and 64 query rows per CTA).
  std::vector<int32_t> plan128(cuda::attention_plan_ints(T)), plan64(plan128.size());
  const cuda::AttentionPlanCounts counts128 = cuda::plan_attention(
      batch.positions.data(), batch.query_start_loc.data(), batch.num_seqs(), c.num_heads, c.num_kv_heads,
      c.head_dim, plan128.data(), 128);
  const cuda::AttentionPlanCounts counts64 = cuda::plan_attention(
      batch.positions.data(), batch.query_start_loc.data(), batch.num_seqs(), c.num_heads, c.num_kv_heads,
      c.head_dim, plan64.data(), 64);
  DeviceBuffer<int32_t> dplan128(plan128), dplan64(plan64);
  std::vector<std::pair<cuda::AttentionMetadata, std::string>> metas = {{meta, " without a plan"}};
  for (const auto& [counts, dplan] : {std::pair{counts128, dplan128.p}, std::pair{counts64, dplan64.p}}) {
    if (counts.prefill_tiles == 0) continue;  // the same call as without a plan
    cuda::AttentionMetadata planned = meta;
    planned.plan = dplan, planned.plan_decode_tokens = counts.decode_tokens;
    planned.plan_prefill_tiles = counts.prefill_tiles, planned.plan_tile_rows = counts.tile_rows;
    metas.emplace_back(planned, " with prefill tiles of " + std::to_string(counts.tile_rows) + " rows");
  }
  cuda::write_kv_cache(dk.p, dv.p, meta, kv_dim, dkc.p, dvc.p, nullptr);
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<E> kc_back = dkc.download();
  EXPECT_EQ(std::memcmp(kc_back.data(), kc_written.data(), kc_back.size() * sizeof(E)), 0)
      << "write_kv_cache " << elem_name<E>();

  std::vector<int> splits = split_counts;
  splits.push_back(cuda::attention_num_splits(T, c.num_kv_heads, num_sms(), kMaxContext));
  std::sort(splits.begin(), splits.end());
  splits.erase(std::unique(splits.begin(), splits.end()), splits.end());
  // One workspace for every call, as in the runner: calls of different split counts must not
  // disturb each other's arrival counts (zeroed once, here). Partials are NaN before each
  // call, so one read before it was written shows.
  size_t ws_bytes = 0;
  for (int s : splits) ws_bytes = std::max(ws_bytes, cuda::attention_workspace_bytes(T, c.num_heads, c.head_dim, s));
  DeviceBuffer<char> ws(std::max<size_t>(ws_bytes, 1));
  const size_t counts = ws_bytes > 0 ? cuda::attention_split_counts_bytes(c.num_heads) : 0;
  CUDA_OK(cudaMemset(ws.p, 0, counts));
  for (const auto& [m, plan_name] : metas) {
    for (int s : splits) {
      CUDA_OK(cudaMemset(ws.p + counts, 0xff, ws.n - counts));
      CUDA_OK(cudaMemset(dout.p, 0xff, q_size * sizeof(E)));
      cuda::paged_attention(dq.p, dkc.p, dvc.p, m, gs, s, s > 1 ? ws.p : nullptr, dout.p, nullptr);
      CUDA_OK(cudaGetLastError());
      CUDA_OK(cudaDeviceSynchronize());
      expect_close(dout.download(), want, kRel, 2e-3f, describe(c, name, s) + plan_name);
    }
  }
}

TYPED_TEST(CudaAttention, PagedAttentionMatchesCpuOverMixedBatches) {
  REQUIRE_DEVICE();
  using E = TypeParam;
  uint32_t seed = 10;
  for (int64_t head_dim : {64, 128}) {
    for (int64_t ratio : {1, 4, 8}) {
      for (int64_t block_size : {16, 32}) {
        check_paged_attention<E>({4 * ratio, 4, head_dim, block_size, 0}, kMixed, seed++);
        check_paged_attention<E>({4 * ratio, 4, head_dim, block_size, 0}, kDecodes, seed++);
      }
    }
  }
  for (const std::vector<Seq>* seqs : {&kMixed, &kDecodes}) {
    check_paged_attention<E>({32, 8, 128, 16, 256}, *seqs, seed++);  // sliding windows
    check_paged_attention<E>({8, 2, 64, 32, 100}, *seqs, seed++);
    check_paged_attention<E>({9, 3, 64, 16, 0}, *seqs, seed++);     // SmolLM2's heads: G = 3
    check_paged_attention<E>({7, 1, 128, 16, 0}, *seqs, seed++);    // G = 7
    check_paged_attention<E>({12, 1, 64, 16, 0}, *seqs, seed++);    // G = 12: 16-row CTAs
    check_paged_attention<E>({40, 2, 128, 16, 0}, *seqs, seed++);   // G = 20: two head chunks
    check_paged_attention<E>({32, 8, 128, 24, 0}, *seqs, seed++);   // a block size not a power of two
    check_paged_attention<E>({8, 4, 256, 16, 0}, *seqs, seed++);    // head_dim 256 (Gemma)
    check_paged_attention<E>({24, 2, 256, 32, 0}, *seqs, seed++);   // head_dim 256, G = 12: two chunks
    check_paged_attention<E>({8, 8, 256, 16, 300}, *seqs, seed++);  // head_dim 256, window
  }
}

// Decodes of 9,001 visible keys at 160 splits (141 used: one per 64 keys): the merge of a
// CTA whose rows' (m, l) fit its spare shared memory (group 2) and of one whose do not
// (group 8, head_dim 64: the per-element merge).
TYPED_TEST(CudaAttention, MergesManySplits) {
  REQUIRE_DEVICE();
  using E = TypeParam;
  static const std::vector<Seq> kLongDecodes = {{9000, 1}, {100, 1}, {5000, 1}};
  check_paged_attention<E>({8, 4, 64, 16, 0}, kLongDecodes, 900, {160});
  check_paged_attention<E>({32, 4, 64, 16, 0}, kLongDecodes, 901, {160});
  check_paged_attention<E>({16, 2, 128, 16, 0}, kLongDecodes, 902, {160});
}

// Long prefill runs through the tiled prefill kernel (and, without a plan, token by token).
TYPED_TEST(CudaAttention, PrefillTilesMatchCpuOverLongRuns) {
  REQUIRE_DEVICE();
  using E = TypeParam;
  uint32_t seed = 500;
  for (int64_t head_dim : {64, 128}) {
    for (int64_t ratio : {1, 4, 8}) check_paged_attention<E>({4 * ratio, 4, head_dim, 16, 0}, kLong, seed++, {1});
    check_paged_attention<E>({9, 3, head_dim, 16, 0}, kLong, seed++, {1});  // G = 3: 42-token tiles
  }
  check_paged_attention<E>({32, 8, 128, 16, 256}, kLong, seed++, {1});  // Llama-8B shape, window 256
  check_paged_attention<E>({8, 2, 64, 32, 100}, kLong, seed++, {1});    // window 100
  check_paged_attention<E>({16, 2, 128, 24, 37}, kLong, seed++, {1});   // window 37, block 24
  check_paged_attention<E>({40, 2, 128, 16, 0}, kLong, seed++, {1});    // G = 20: 6-token tiles
}

// A graph captured at one step's contexts, replayed after the metadata in the same device
// buffers changed to other contexts: the kernel finds its key ranges on the device.
TYPED_TEST(CudaAttention, CapturedGraphFollowsNewContexts) {
  REQUIRE_DEVICE();
  using E = TypeParam;
  std::mt19937 rng(99);
  const AttentionCase c{32, 8, 128, 16, 0};
  const std::vector<Seq> first = {{4, 1}, {299, 1}, {1999, 1}}, second = {{899, 1}, {16, 1}, {4099, 1}};
  const int64_t total_blocks = std::max(blocks_needed(first, c.block_size), blocks_needed(second, c.block_size));
  const int64_t T = 3, kv_dim = c.num_kv_heads * c.head_dim, q_size = T * c.num_heads * c.head_dim;
  ElemData<E> kc(total_blocks * c.block_size * kv_dim, rng), vc(total_blocks * c.block_size * kv_dim, rng);
  ElemData<E> q(q_size, rng);
  DeviceBuffer<E> dkc(kc.h), dvc(vc.h), dq(q.h), dout(q_size);
  DeviceBuffer<int32_t> dpos(T), dseq(T), dindptr(T + 1), dids(total_blocks);
  const int splits = cuda::attention_num_splits(T, c.num_kv_heads, num_sms(), kMaxContext);
  DeviceBuffer<char> ws(cuda::attention_workspace_bytes(T, c.num_heads, c.head_dim, splits));
  CUDA_OK(cudaMemset(ws.p, 0, ws.n));
  cuda::AttentionMetadata meta{dpos.p, dseq.p, nullptr, dindptr.p, dids.p, T};
  const cuda::AttentionShape gs{c.num_heads, c.num_kv_heads, c.head_dim, c.block_size,
                                1.0f / std::sqrt(static_cast<float>(c.head_dim)), 0};
  const cpu::AttentionShape cs{gs.num_heads, gs.num_kv_heads, gs.head_dim, gs.block_size, gs.scale, 0};

  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  cuda::paged_attention(dq.p, dkc.p, dvc.p, meta, gs, splits, ws.p, dout.p, stream);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (const auto& seqs : {first, second}) {
    const Step step = make_step(seqs, c.block_size, total_blocks, rng);
    const ForwardBatch& b = step.batch;
    CUDA_OK(cudaMemcpy(dpos.p, b.positions.data(), T * sizeof(int32_t), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dseq.p, step.token_seq.data(), T * sizeof(int32_t), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dindptr.p, b.block_table_indptr.data(), (T + 1) * sizeof(int32_t), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dids.p, b.block_table_ids.data(), b.block_table_ids.size() * sizeof(int32_t),
                       cudaMemcpyHostToDevice));
    std::vector<float> want(q_size);
    cpu::paged_attention(q.f.data(), kc.f.data(), vc.f.data(), b, cs, want.data());
    CUDA_OK(cudaMemset(dout.p, 0xff, q_size * sizeof(E)));
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    expect_close(dout.download(), want, kRel, 2e-3f,
                      elem_name<E>() + " graph replay, splits " + std::to_string(splits));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// rope_paged_attention (RoPE and the K/V write in the attention kernel's prologue) against
// qkv_rope_cache + paged_attention on the same inputs: a decode step (one token per sequence)
// plus three padding tokens (one extra sequence at position 0 with equal inputs, as the
// runner pads a CUDA graph's batch), the new tokens' cache slots NaN before the call.
struct RopeCase {
  AttentionCase shape;
  bool bias, qk_norm;
  RopeLayout layout;
};

template <typename E>  // the element type (T is the step's token count here)
void check_rope_attention(const RopeCase& rc, uint32_t seed) {
  const AttentionCase& c = rc.shape;
  std::mt19937 rng(seed);
  const int64_t pad = 3, bs = c.block_size;
  const int64_t total_blocks = blocks_needed(kDecodes, bs) + 2;  // the last one: the padding's
  const Step step = make_step(kDecodes, bs, total_blocks - 1, rng);
  const ForwardBatch& b = step.batch;
  const int64_t real = b.num_tokens(), T = real + pad, nh = c.num_heads, nkv = c.num_kv_heads, hd = c.head_dim;
  const int64_t heads = nh + 2 * nkv, kv_dim = nkv * hd, num_seqs = b.num_seqs();
  std::vector<int32_t> positions = b.positions, token_seq = step.token_seq, indptr = b.block_table_indptr;
  std::vector<int32_t> ids = b.block_table_ids;
  std::vector<int64_t> slots = b.slot_mapping;
  for (int64_t i = 0; i < pad; ++i) {
    positions.push_back(0), token_seq.push_back(static_cast<int32_t>(num_seqs));
    slots.push_back((total_blocks - 1) * bs);
  }
  ids.push_back(static_cast<int32_t>(total_blocks - 1));
  indptr.push_back(static_cast<int32_t>(ids.size()));

  ElemData<E> kc(total_blocks * bs * kv_dim, rng), vc(total_blocks * bs * kv_dim, rng);
  ElemData<E> qkv(T * heads * hd, rng), bias(heads * hd, rng, 0.5f), qn(hd, rng), kn(hd, rng);
  for (int64_t t = real + 1; t < T; ++t) {  // the padding tokens' equal inputs
    std::copy_n(qkv.h.begin() + real * heads * hd, heads * hd, qkv.h.begin() + t * heads * hd);
  }
  poison_unseen(step, bs, kv_dim, kc);
  poison_unseen(step, bs, kv_dim, vc);
  const E nan = from_float<E>(std::numeric_limits<float>::quiet_NaN());
  for (int64_t t = 0; t < T; ++t) {
    std::fill_n(kc.h.begin() + slots[t] * kv_dim, kv_dim, nan);
    std::fill_n(vc.h.begin() + slots[t] * kv_dim, kv_dim, nan);
  }
  std::vector<float> inv_freq(hd / 2);
  for (int64_t i = 0; i < hd / 2; ++i) inv_freq[i] = std::pow(500000.0f, -2.0f * static_cast<float>(i) / hd);

  DeviceBuffer<E> dqkv(qkv.h), dbias(bias.h), dqn(qn.h), dkn(kn.h), dq(T * nh * hd), dout(T * nh * hd),
      dout_ref(T * nh * hd), dkc(kc.h.size()), dvc(vc.h.size()), dkc_ref(kc.h), dvc_ref(vc.h);
  DeviceBuffer<float> dfreq(inv_freq);
  DeviceBuffer<int32_t> dpos(positions), dseq(token_seq), dindptr(indptr), dids(ids);
  DeviceBuffer<int64_t> dslots(slots);
  const cuda::AttentionMetadata meta{dpos.p, dseq.p, dslots.p, dindptr.p, dids.p, T};
  const cuda::AttentionShape gs{nh, nkv, hd, bs, 1.0f / std::sqrt(static_cast<float>(hd)), c.sliding_window};
  const cuda::QkvRope<E> rope{rc.bias ? dbias.p : nullptr, rc.qk_norm ? dqn.p : nullptr, rc.qk_norm ? dkn.p : nullptr,
                           1e-6f, dfreq.p, rc.layout};
  cuda::qkv_rope_cache(dqkv.p, rope.bias, rope.q_norm, rope.k_norm, rope.eps, dpos.p, dslots.p, T, nh, nkv, hd,
                       dfreq.p, rc.layout, dq.p, dkc_ref.p, dvc_ref.p, nullptr);
  std::vector<int> splits = {1, 3, 32, cuda::attention_num_splits(T, nkv, num_sms(), kMaxContext)};
  size_t ws_bytes = 0;
  for (int s : splits) ws_bytes = std::max(ws_bytes, cuda::attention_workspace_bytes(T, nh, hd, s));
  DeviceBuffer<char> ws(std::max<size_t>(ws_bytes, 1));
  CUDA_OK(cudaMemset(ws.p, 0, ws.n));
  const std::string name = elem_name<E>() + " rope in attention" + (rc.bias ? " bias" : "") +
                           (rc.qk_norm ? " qk_norm" : "") + (rc.layout == RopeLayout::kInterleaved ? " interleaved" : "");
  DeviceBuffer<E> unused_q(T * nh * hd);  // rope_paged_attention's q_out (its two-op path only)
  for (int s : splits) {
    const std::string what = describe(c, name, s);
    CUDA_OK(cudaMemcpy(dkc.p, kc.h.data(), kc.h.size() * sizeof(E), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dvc.p, vc.h.data(), vc.h.size() * sizeof(E), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dout.p, 0xff, dout.n * sizeof(E)));
    cuda::paged_attention(dq.p, dkc_ref.p, dvc_ref.p, meta, gs, s, s > 1 ? ws.p : nullptr, dout_ref.p, nullptr);
    cuda::rope_paged_attention(dqkv.p, rope, meta, gs, s, s > 1 ? ws.p : nullptr, unused_q.p, dkc.p, dvc.p, dout.p,
                               nullptr);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<float> want;
    for (E x : dout_ref.download()) want.push_back(to_float(x));
    expect_close(dout.download(), want, kRel, 1e-3f, what);
    // The caches as qkv_rope_cache left them (NaN where no token may look, in both).
    const std::vector<E> k_got = dkc.download(), k_want = dkc_ref.download();
    EXPECT_EQ(std::memcmp(dvc.download().data(), dvc_ref.download().data(), vc.h.size() * sizeof(E)), 0)
        << "v cache, " << what;
    size_t bad = 0;
    for (size_t i = 0; i < k_got.size(); ++i) {
      const float g = to_float(k_got[i]), w = to_float(k_want[i]);
      if (std::isnan(w) ? !std::isnan(g) : !(std::fabs(g - w) <= kRel * std::fabs(w) + 1e-3f)) ++bad;
    }
    EXPECT_EQ(bad, 0u) << "k cache, " << what;
  }
}

TYPED_TEST(CudaAttention, RopeInAttentionEqualsRopeThenAttention) {
  REQUIRE_DEVICE();
  uint32_t seed = 700;
  for (const RopeCase& rc : {RopeCase{{32, 8, 128, 16, 0}, false, false, RopeLayout::kHalf},  // Llama 3 8B
                             RopeCase{{9, 3, 64, 16, 0}, false, false, RopeLayout::kInterleaved},
                             RopeCase{{28, 4, 128, 16, 0}, true, false, RopeLayout::kHalf},  // Qwen2: bias
                             RopeCase{{32, 8, 128, 32, 0}, false, true, RopeLayout::kHalf},  // Qwen3: q/k norms
                             RopeCase{{12, 1, 64, 16, 0}, true, true, RopeLayout::kHalf},    // 16-row CTAs
                             RopeCase{{40, 2, 128, 16, 0}, false, false, RopeLayout::kHalf},  // two head chunks
                             RopeCase{{8, 4, 256, 16, 300}, true, true, RopeLayout::kInterleaved},
                             RopeCase{{32, 8, 128, 24, 256}, false, false, RopeLayout::kHalf}}) {
    check_rope_attention<TypeParam>(rc, seed++);
  }
}

// Host-side sizing: no device needed.
TEST(CudaAttention, SplitsFollowTheBatchAndWorkspaceFitsThem) {
  // At least 4 CTAs (token x KV head x split) per SM: 132 SMs, 8 KV heads.
  EXPECT_EQ(cuda::attention_num_splits(1, 8, 132, 131072), 66);
  EXPECT_EQ(cuda::attention_num_splits(8, 8, 132, 131072), 9);
  EXPECT_EQ(cuda::attention_num_splits(64, 8, 132, 131072), 2);
  EXPECT_EQ(cuda::attention_num_splits(66, 8, 132, 131072), 1);
  EXPECT_EQ(cuda::attention_num_splits(4096, 8, 132, 131072), 1);
  // Capped at one split per 256 keys of the longest context.
  EXPECT_EQ(cuda::attention_num_splits(1, 8, 132, 4096), 16);
  EXPECT_EQ(cuda::attention_num_splits(1, 8, 132, 100), 1);
  EXPECT_EQ(cuda::attention_num_splits(0, 8, 132, 4096), 16);
  EXPECT_EQ(cuda::attention_workspace_bytes(64, 32, 128, 1), 0u);
  // The arrival counts' fixed region, then the partials.
  EXPECT_EQ(cuda::attention_split_counts_bytes(32), size_t{cuda::kAttentionSplitMaxTokens} * 32 * sizeof(int));
  EXPECT_EQ(cuda::attention_workspace_bytes(2, 32, 128, 4),
            cuda::attention_split_counts_bytes(32) + 2u * 32 * 4 * (128 + 2) * sizeof(float));
  // Past kAttentionSplitMaxTokens: one split, no workspace.
  EXPECT_EQ(cuda::attention_num_splits(cuda::kAttentionSplitMaxTokens + 1, 1, 132, 131072), 1);
  EXPECT_EQ(cuda::attention_workspace_bytes(cuda::kAttentionSplitMaxTokens + 1, 32, 128, 4), 0u);
}

// The prefill plan, on the host: runs of >= 16 tokens in tiles of 128 / G tokens (longest key
// range first), the other tokens listed for the split-KV kernel.
TEST(CudaAttention, PlanTilesPrefillRuns) {
  ForwardBatch b;
  const std::vector<int32_t> table(64, 1);
  const std::vector<int32_t> tokens(300, 1);
  b.add_sequence(tokens.data(), 40, 0, table, 16, true);    // tokens 0 .. 39: tiles of 32 + 8
  b.add_sequence(tokens.data(), 1, 5, table, 16, true);     // token 40: a decode
  b.add_sequence(tokens.data(), 15, 0, table, 16, true);    // tokens 41 .. 55: too short for tiles
  b.add_sequence(tokens.data(), 70, 100, table, 16, true);  // tokens 56 .. 125: 32 + 32 + 6
  const int64_t T = b.num_tokens();
  std::vector<int32_t> plan(cuda::attention_plan_ints(T), -1);
  const cuda::AttentionPlanCounts n =
      cuda::plan_attention(b.positions.data(), b.query_start_loc.data(), b.num_seqs(), 32, 8, 128, plan.data(), 128);
  EXPECT_EQ(n.tile_rows, 128);
  ASSERT_EQ(n.decode_tokens, 16);
  ASSERT_EQ(n.prefill_tiles, 5);
  EXPECT_LE(n.ints(), plan.size());
  for (int32_t i = 0; i < 16; ++i) EXPECT_EQ(plan[i], 40 + i);
  // (first token, tokens), the highest last position first.
  const std::vector<int32_t> tiles(plan.begin() + 16, plan.begin() + 26);
  EXPECT_EQ(tiles, (std::vector<int32_t>{120, 6, 88, 32, 56, 32, 32, 8, 0, 32}));
  // 64-row tiles: 16 tokens at G = 4.
  const cuda::AttentionPlanCounts n64 =
      cuda::plan_attention(b.positions.data(), b.query_start_loc.data(), b.num_seqs(), 32, 8, 128, plan.data(), 64);
  EXPECT_EQ(n64.tile_rows, 64);
  EXPECT_EQ(n64.decode_tokens, 16);
  EXPECT_EQ(n64.prefill_tiles, 3 + 5);
  // Chosen per step (tile_rows 0) for 132 SMs: this batch's 5 tiles of 128 rows x 8 KV heads
  // are 40 CTAs, under two per SM: 64-row tiles. A 4096-token run (128 tiles, 1024 CTAs)
  // keeps 128 rows; no SM count: 128.
  {
    EXPECT_EQ(cuda::plan_attention(b.positions.data(), b.query_start_loc.data(), b.num_seqs(), 32, 8, 128,
                                   plan.data(), 0, 132)
                  .tile_rows,
              64);
    EXPECT_EQ(cuda::plan_attention(b.positions.data(), b.query_start_loc.data(), b.num_seqs(), 32, 8, 128,
                                   plan.data(), 0, 0)
                  .tile_rows,
              128);
    ForwardBatch big;
    const std::vector<int32_t> long_table(256, 1), long_tokens(4096, 1);
    big.add_sequence(long_tokens.data(), 4096, 0, long_table, 16, true);
    std::vector<int32_t> big_plan(cuda::attention_plan_ints(big.num_tokens()));
    EXPECT_EQ(cuda::plan_attention(big.positions.data(), big.query_start_loc.data(), big.num_seqs(), 32, 8, 128,
                                   big_plan.data(), 0, 132)
                  .tile_rows,
              128);
  }
  // head_dim 256 (and G > 128) take no tiles: every token goes to the split-KV kernel.
  const cuda::AttentionPlanCounts none =
      cuda::plan_attention(b.positions.data(), b.query_start_loc.data(), b.num_seqs(), 8, 4, 256, plan.data(), 128);
  EXPECT_EQ(none.prefill_tiles, 0);
  EXPECT_EQ(none.decode_tokens, T);
}

}  // namespace
}  // namespace tessera
