// Attention entry points used inside the CUDA backend only.
#pragma once

#include "backend/cuda/ops.h"

namespace tessera::cuda {

// paged_attention for head dims other than 64/128/256 (even, at most 256): one block per
// (token, head), no splits, no workspace.
void paged_attention_any_head_dim(const bf16* q, const bf16* k_cache, const bf16* v_cache,
                                  const AttentionMetadata& meta, const AttentionShape& shape, bf16* out,
                                  cudaStream_t stream);

namespace detail {
// attention_prefill.cu: the tiled prefill kernel over meta's plan (plan_prefill_tiles > 0).
void attention_prefill(const bf16* q, const bf16* k_cache, const bf16* v_cache, const AttentionMetadata& meta,
                       const AttentionShape& shape, bf16* out, cudaStream_t stream);
}  // namespace detail

}  // namespace tessera::cuda
