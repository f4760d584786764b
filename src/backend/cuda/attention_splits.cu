// The split-KV side of paged attention (attention.cu): how many splits a batch gets and the
// workspace their partials (and the per-CTA arrival counts of the in-kernel merge) need.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/ops.h"

namespace tessera::cuda {

// At least 4 CTAs per SM: 3 fit at once (head_dim <= 128, G <= 8), so a batch of a few long
// CTAs does not leave most SMs idle behind its last wave. One split per token from 132 x 4 /
// num_kv_heads tokens on (66 with 8 KV heads); at most one split per 256 keys of max_context.
int attention_num_splits(int64_t num_tokens, int64_t num_kv_heads, int num_sms, int64_t max_context) {
  if (num_tokens > kAttentionSplitMaxTokens) return 1;
  const int64_t ctas = std::max<int64_t>(1, num_tokens * num_kv_heads);
  const int64_t want = (4 * int64_t{std::max(num_sms, 1)} + ctas - 1) / ctas;
  const int64_t cap = std::max<int64_t>(1, (max_context + 255) / 256);
  return static_cast<int>(std::clamp<int64_t>(want, 1, cap));
}

size_t attention_split_counts_bytes(int64_t num_heads) {
  return static_cast<size_t>(kAttentionSplitMaxTokens * num_heads) * sizeof(int);
}

size_t attention_workspace_bytes(int64_t num_tokens, int64_t num_heads, int64_t head_dim, int num_splits) {
  if (num_splits <= 1 || num_tokens > kAttentionSplitMaxTokens) return 0;
  // The arrival counts (a fixed region: see ops.h), then acc, m and l per (token, head, split).
  return attention_split_counts_bytes(num_heads) +
         static_cast<size_t>(num_tokens * num_heads * num_splits * (head_dim + 2)) * sizeof(float);
}

}  // namespace tessera::cuda
