// Self-attention block: q/k/v projections (optional bias), optional per-head q/k RMSNorm,
// RoPE, paged attention over the KV cache, output projection.
#pragma once

#include <vector>

#include "config/model_config.h"
#include "backend/forward_batch.h"
#include "kv/kv_cache.h"
#include "model/layers/linear.h"
#include "model/layers/weight_names.h"

namespace tessera {

struct AttentionScratch {
  std::vector<float> q;     // [num_tokens, num_heads, head_dim]
  std::vector<float> k;     // [num_tokens, num_kv_heads, head_dim]
  std::vector<float> v;     // [num_tokens, num_kv_heads, head_dim]
  std::vector<float> attn;  // [num_tokens, num_heads, head_dim]
};

class AttentionBlock {
 public:
  static Result<AttentionBlock> load(const WeightStore& store, WeightScheme scheme,
                                     const ModelConfig& c, int64_t layer);

  // out [num_tokens, hidden] = attention(x [num_tokens, hidden]); writes this step's K/V.
  void forward(const float* x, const ForwardBatch& batch, KvCache& cache, const float* inv_freq,
               AttentionScratch& s, float* out) const;

  // For backends that copy the weights (CUDA).
  const Linear& q_proj() const { return q_proj_; }
  const Linear& k_proj() const { return k_proj_; }
  const Linear& v_proj() const { return v_proj_; }
  const Linear& o_proj() const { return o_proj_; }
  const std::vector<float>& q_norm() const { return q_norm_; }  // [head_dim] or empty
  const std::vector<float>& k_norm() const { return k_norm_; }  // [head_dim] or empty

 private:
  const ModelConfig* config_ = nullptr;
  int64_t layer_ = 0;
  Linear q_proj_, k_proj_, v_proj_, o_proj_;
  std::vector<float> q_norm_, k_norm_;  // [head_dim], Qwen3 only
};

}  // namespace tessera
