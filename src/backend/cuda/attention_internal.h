// Attention entry points used inside the CUDA backend only.
#pragma once

#include "backend/cuda/ops.h"

namespace tessera::cuda {

// paged_attention for head dims other than 64/128/256 (even, at most 256): one block per
// (token, head), no splits, no workspace.
template <typename T>
void paged_attention_any_head_dim(const T* q, const T* k_cache, const T* v_cache,
                                  const AttentionMetadata& meta, const AttentionShape& shape, T* out,
                                  cudaStream_t stream);

namespace detail {
// attention_prefill.cu: the tiled prefill kernel over meta's plan (plan_prefill_tiles > 0).
template <typename T>
void attention_prefill(const T* q, const T* k_cache, const T* v_cache, const AttentionMetadata& meta,
                       const AttentionShape& shape, T* out, cudaStream_t stream);
}  // namespace detail

}  // namespace tessera::cuda
