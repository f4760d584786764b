// Fused CUDA ops of the device forward pass: each equals a sequence of the CPU twins'
// ops (src/backend/cpu/ops.h) on the same inputs, and saves kernel launches and round trips
// through memory. Checked against those sequences by tests/cuda.
#pragma once

#include "backend/cuda/ops.h"

namespace tessera::cuda {

// The attention block's input side after the fused q/k/v projection, per token t:
//   qkv [n, (num_heads + 2 * num_kv_heads) * head_dim]: q heads, then k heads, then v heads.
//   x = head row (+ bias [(num_heads + 2 * num_kv_heads) * head_dim], when not null);
//   q and k heads: x = rms_norm(x) * q_norm / k_norm [head_dim] (when not null, Qwen3);
//   then RoPE at positions[t] (inv_freq [head_dim / 2]);
//   q heads -> q_out [n, num_heads, head_dim]; k and v heads -> k_cache / v_cache
//   [num_blocks, block_size, num_kv_heads, head_dim] at slot_mapping[t].
// head_dim at most 256.
template <typename T>
void qkv_rope_cache(const T* qkv, const T* bias, const T* q_norm, const T* k_norm, float eps,
                    const int32_t* positions, const int64_t* slot_mapping, int64_t n, int64_t num_heads,
                    int64_t num_kv_heads, int64_t head_dim, const float* inv_freq, RopeLayout layout, T* q_out,
                    T* k_cache, T* v_cache, cudaStream_t stream);

// qkv_rope_cache's per-model inputs.
template <typename T>
struct QkvRope {
  const T* bias = nullptr;    // [(num_heads + 2 * num_kv_heads) * head_dim] or null
  const T* q_norm = nullptr;  // [head_dim] or null
  const T* k_norm = nullptr;  // [head_dim] or null
  float eps = 0.0f;
  const float* inv_freq = nullptr;  // [head_dim / 2]
  RopeLayout layout = RopeLayout::kHalf;
};

// qkv_rope_cache, then paged_attention over its q_out: equal results, in one kernel where it
// can (head_dim 64 / 128 / 256, no prefill tiles in meta's plan, 16-byte aligned inputs; else
// the two ops). The attention CTAs rotate their query heads in their prologue, and the CTA
// whose keys end at a token's position writes that token's K and V into the caches before it
// reads them: so it needs that no token of the step attends to another token of the step
// (each token the only one of its sequence: decode steps). meta.rope_in_attention
// off turns the fusion off. q_out: written by the two-op path only.
template <typename T>
void rope_paged_attention(const T* qkv, const QkvRope<T>& rope, const AttentionMetadata& meta,
                          const AttentionShape& shape, int num_splits, void* workspace, T* q_out, T* k_cache,
                          T* v_cache, T* out, cudaStream_t stream);

// out [n, inter] = silu(gate) * up for gate_up [n, 2 * inter] (gate columns first): the
// output of the fused gate/up projection.
template <typename T>
void silu_and_mul_fused(const T* gate_up, int64_t n, int64_t inter, T* out, cudaStream_t stream);

// out [num_rows, dim] = x [rows of x, dim] at row indices idx [num_rows].
template <typename T>
void gather_rows(const T* x, const int32_t* idx, int64_t num_rows, int64_t dim, T* out, cudaStream_t stream);

}  // namespace tessera::cuda
