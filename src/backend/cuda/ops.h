// CUDA twins of the CPU ops (src/backend/cpu/ops.h): the same names and arguments, on
// device memory, 16-bit activations (T: bf16 or f16, the model's compute dtype) with fp32
// arithmetic, queued on a stream. Each op is checked against its CPU twin by tests/cuda.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "config/rope_layout.h"

namespace tessera::cuda {

using bf16 = __nv_bfloat16;
using f16 = __half;

// The element types every templated op and kernel is instantiated for:
// TESSERA_FOR_EACH_ELEM(X) expands X(bf16) X(f16) (explicit instantiations in the .cu files).
#define TESSERA_FOR_EACH_ELEM(X) X(::tessera::cuda::bf16) X(::tessera::cuda::f16)

// out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * weight, for rows t < n. out may alias x.
template <typename T>
void rms_norm(const T* x, const T* weight, float eps, int64_t n, int64_t dim, T* out, cudaStream_t stream);

// residual[t] += x[t] (rounded to T), then x[t] = rms_norm(residual[t]) * weight: the
// residual add and the next layer's norm in one pass over the rows.
template <typename T>
void fused_add_rms_norm(T* x, T* residual, const T* weight, float eps, int64_t n, int64_t dim,
                        cudaStream_t stream);

// out[t, i] = silu(gate[t, i]) * up[t, i]; gate, up, out are [n, inter].
template <typename T>
void silu_and_mul(const T* gate, const T* up, int64_t n, int64_t inter, T* out, cudaStream_t stream);

// Rotates x [num_tokens, num_heads, head_dim] in place by angle positions[t] * inv_freq[i]
// (inv_freq [head_dim / 2] on the device, from cpu::rope_inv_freq).
template <typename T>
void apply_rope(T* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
                const float* inv_freq, RopeLayout layout, cudaStream_t stream);

// out[t, :] = table[ids[t], :] for a table [vocab, dim]; ids outside [0, vocab) give
// zero rows (the engine rejects them before they get here).
template <typename T>
void embedding(const T* table, int64_t vocab, int64_t dim, const int32_t* ids, int64_t n, T* out,
               cudaStream_t stream);

// One step's attention metadata in device memory (planned once per step from the
// ForwardBatch on the CPU, read by every layer).
struct AttentionMetadata {
  const int32_t* positions = nullptr;           // [num_tokens] position of each token
  const int32_t* token_seq = nullptr;           // [num_tokens] the sequence of each token
  const int64_t* slot_mapping = nullptr;        // [num_tokens] cache slot of each token's K/V
  const int32_t* block_table_indptr = nullptr;  // [num_seqs + 1] CSR over block_table_ids
  const int32_t* block_table_ids = nullptr;     // block ids of each sequence, in order
  int64_t num_tokens = 0;
  // Optional prefill plan from plan_attention (its ints copied to the device): with
  // plan_prefill_tiles > 0, runs of prefill tokens take the tiled prefill kernel and the
  // plan_decode_tokens other tokens the split-KV kernel. Without it (decode steps, CUDA
  // graphs) every token takes the split-KV kernel.
  const int32_t* plan = nullptr;
  int32_t plan_decode_tokens = 0;
  int32_t plan_prefill_tiles = 0;
  int32_t plan_tile_rows = 128;  // query rows (token x head) per tile: the plan's tile_rows
  // Split-KV kernel: a token takes at most one split per this many visible keys.
  int32_t min_split_keys = 64;
  // rope_paged_attention: RoPE and the KV write inside the attention kernel where it can.
  bool rope_in_attention = true;
};

struct AttentionShape {
  int64_t num_heads;
  int64_t num_kv_heads;
  int64_t head_dim;  // even, at most 256; 64, 128 and 256 take the tensor-core kernel
  int64_t block_size;
  float scale;                 // usually 1 / sqrt(head_dim)
  int64_t sliding_window = 0;  // 0: none; else key positions > pos - window
};

// Writes this step's k, v [num_tokens, kv_dim] into the paged caches
// [num_blocks, block_size, kv_dim] at meta.slot_mapping.
template <typename T>
void write_kv_cache(const T* k, const T* v, const AttentionMetadata& meta, int64_t kv_dim, T* k_cache,
                    T* v_cache, cudaStream_t stream);

// Causal attention of each query token over its sequence's cached keys and values (this
// step's K/V already written): q, out [num_tokens, num_heads, head_dim]; caches
// [num_blocks, block_size, num_kv_heads, head_dim]. Prefill chunks, chunked-prefill
// continuations and decodes mix freely; query head h reads KV head h / (num_heads /
// num_kv_heads). Token t sees key positions [first, positions[t]], first = positions[t] -
// sliding_window + 1 (at least 0) under a window, else 0.
//
// Split-KV on tensor cores: grid (num_tokens, num_kv_heads x ceil(G / 8 or 16), num_splits),
// one CTA per token, KV head (all its G query heads at once) and key range. A token uses
// splits = min(num_splits, ceil(visible / 64)) of them (the rest return at once); split s
// covers keys [first + s*len, first + (s+1)*len), len = ceil(visible / splits) rounded up to
// 2048 / head_dim, computed on the device, so a CUDA graph captured at a fixed num_tokens and
// num_splits stays valid as contexts grow. One split writes out directly; else the partials
// go to workspace and the last CTA of each (token, head group) to finish merges them. No
// host sync, no allocation.
//   head_dim: 64, 128 or 256 (aborts otherwise); any G = num_heads / num_kv_heads.
//   block_size: any (a power of two is faster); q, out, caches and workspace 16-byte aligned.

// Splits per query token that keep the GPU busy for num_tokens tokens (at least 4 CTAs per
// SM: 1 token x 8 KV heads on 132 SMs -> 66, 8 -> 9, 64 -> 2, 66+ -> 1; a function of the
// batch only, not of the context lengths, so CUDA graphs stay valid): num_sms from
// cudaDeviceProp::multiProcessorCount; never more than ceil(max_context / 256), max_context
// an upper bound on any context (e.g. max_model_len).
int attention_num_splits(int64_t num_tokens, int64_t num_kv_heads, int num_sms, int64_t max_context);

// Bytes of workspace paged_attention needs at this many tokens and splits (0 when
// num_splits == 1 or num_tokens > kAttentionSplitMaxTokens): int arrival counts of the
// in-kernel merge, a region of attention_split_counts_bytes(num_heads) at the start whose
// place and size depend on no call, then fp32 acc [num_tokens, num_heads, num_splits,
// head_dim], m and l [num_tokens, num_heads, num_splits]. Grows with each argument, so one
// workspace sized for the largest call serves every smaller one. Zero it once after
// allocating it: every call leaves the counts at zero again, and only the counts must be.
constexpr int64_t kAttentionSplitMaxTokens = 2048;  // more tokens: one split
size_t attention_split_counts_bytes(int64_t num_heads);
size_t attention_workspace_bytes(int64_t num_tokens, int64_t num_heads, int64_t head_dim, int num_splits);

// Prefill plan of one step, on the host (once per step, for every layer): each sequence's
// run of >= 16 query tokens is cut into tiles of tile_rows / G tokens (G = num_heads /
// num_kv_heads), one CTA per tile and KV head in the tiled prefill kernel (FlashAttention-2
// style: every K/V row read once per tile, not once per token), the longest key ranges
// first; the other tokens are listed for the split-KV kernel. positions [num_tokens] and
// query_start_loc [num_seqs + 1] (CSR of each sequence's tokens, consecutive in the batch,
// increasing positions) on the host; plan receives the decode tokens, then (first token,
// tokens) per tile, at most attention_plan_ints(num_tokens) ints in all. head_dim 64 and 128
// with G <= tile_rows only: other shapes get no tiles. tile_rows: 128 or 64; 0: 128
// unless the step's 128-row tiles give
// fewer than two CTAs (tile x KV head) per SM of num_sms, then 64 (no num_sms: 128). Point
// AttentionMetadata::plan at a device copy and copy the counts and tile_rows into it (or
// leave plan null when prefill_tiles == 0).
struct AttentionPlanCounts {
  int32_t decode_tokens = 0;
  int32_t prefill_tiles = 0;
  int32_t tile_rows = 128;
  size_t ints() const { return static_cast<size_t>(decode_tokens) + 2 * static_cast<size_t>(prefill_tiles); }
};
size_t attention_plan_ints(int64_t num_tokens);
AttentionPlanCounts plan_attention(const int32_t* positions, const int32_t* query_start_loc, int64_t num_seqs,
                                   int64_t num_heads, int64_t num_kv_heads, int64_t head_dim, int32_t* plan,
                                   int tile_rows = 0, int num_sms = 0);

// num_splits >= 1 (attention_num_splits, or any value: results agree up to rounding; one
// split past kAttentionSplitMaxTokens tokens); workspace: at least
// attention_workspace_bytes(num_tokens, num_heads, head_dim, num_splits) bytes, zeroed once
// and shared by any number of calls (one stream at a time), unused (may be null) with one
// split. With a plan, num_splits and the workspace serve its decode tokens (indexed by token
// as without one).
template <typename T>
void paged_attention(const T* q, const T* k_cache, const T* v_cache, const AttentionMetadata& meta,
                     const AttentionShape& shape, int num_splits, void* workspace, T* out, cudaStream_t stream);

// Greedy sampling and logprobs, one thread block per row of logits [n, vocab] (fp32):
// next[r] = argmax (the lowest id among equal maxima, as the CPU sampler), and, when
// logprobs is not null, logprobs[r, :] = log_softmax(logits[r, :]).
void greedy_sample(const float* logits, int64_t n, int64_t vocab, int32_t* next, float* logprobs,
                   cudaStream_t stream);

}  // namespace tessera::cuda
