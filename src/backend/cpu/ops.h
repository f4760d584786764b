// CPU ops other than matmul (see matmul.h). fp32 activations, AVX2 + OpenMP.
#pragma once

#include <cstdint>

#include "config/model_config.h"
#include "backend/forward_batch.h"
#include "kv/kv_cache.h"
#include "tensor/tensor.h"

namespace tessera::cpu {

// out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * weight, for rows t < n. out may alias x.
void rms_norm(const float* x, const float* weight, float eps, int64_t n, int64_t dim, float* out);

// Per-frequency RoPE inverse frequencies [head_dim / 2] with the model's scaling applied.
// `freq_factors` (GGUF rope_freqs.weight, may be null) divides each frequency.
void rope_inv_freq(const ModelConfig& c, const float* freq_factors, float* inv_freq);

// Rotates x [num_tokens, num_heads, head_dim] in place by angle positions[t] * inv_freq[i].
void apply_rope(float* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads,
                int64_t head_dim, const float* inv_freq, RopeLayout layout);

// out[t, i] = silu(gate[t, i]) * up[t, i]; gate, up, out are [n, inter].
void silu_and_mul(const float* gate, const float* up, int64_t n, int64_t inter, float* out);

// x[i] += y[i]
void add_inplace(float* x, const float* y, int64_t n);

// out[t, :] = table[ids[t], :] for an embedding table [vocab, dim] of any dtype.
void embedding(const TensorView& table, const int32_t* ids, int64_t n, float* out);

// Writes this step's k, v [num_tokens, num_kv_heads, head_dim] into the paged cache
// [num_blocks, block_size, num_kv_heads, head_dim] of elements of `dtype` at
// batch.slot_mapping (16-bit types rounded to nearest even).
void write_kv_cache(const float* k, const float* v, const ForwardBatch& batch, int64_t kv_dim, void* k_cache,
                    void* v_cache, KvDtype dtype = KvDtype::kFloat32);

struct AttentionShape {
  int64_t num_heads;
  int64_t num_kv_heads;
  int64_t head_dim;
  int64_t block_size;
  float scale;                 // usually 1 / sqrt(head_dim)
  int64_t sliding_window = 0;  // 0: none; else key positions > pos - window
};

// Causal attention of each query token over its sequence's cached keys/values (the
// current step's K/V must already be written). q [num_tokens, num_heads, head_dim],
// out [num_tokens, num_heads, head_dim]. Token t of sequence s at position p attends to
// positions 0..p of s, found through s's block table.
void paged_attention(const float* q, const void* k_cache, const void* v_cache, const ForwardBatch& batch,
                     const AttentionShape& shape, float* out, KvDtype dtype = KvDtype::kFloat32);

}  // namespace tessera::cpu
