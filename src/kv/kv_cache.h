// Paged KV cache storage on the host: per layer, K and V as
// [num_blocks, block_size, num_kv_heads, head_dim] fp32. Block 0 is the null block,
// never handed to a sequence. Which blocks a sequence owns is the block manager's job.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera {

struct KvCacheShape {
  int64_t num_layers = 0;
  int64_t num_blocks = 0;
  int64_t block_size = 16;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t kv_dim() const { return num_kv_heads * head_dim; }
  int64_t bytes() const { return 2 * num_layers * num_blocks * block_size * kv_dim() * 4; }
};

class KvCache {
 public:
  explicit KvCache(const KvCacheShape& shape)
      : shape_(shape),
        k_(static_cast<size_t>(shape.num_layers)),
        v_(static_cast<size_t>(shape.num_layers)) {
    const size_t per_layer = static_cast<size_t>(shape.num_blocks * shape.block_size * shape.kv_dim());
    for (auto& k : k_) k.assign(per_layer, 0.0f);
    for (auto& v : v_) v.assign(per_layer, 0.0f);
  }
  const KvCacheShape& shape() const { return shape_; }
  float* k(int64_t layer) { return k_[layer].data(); }  // [num_blocks, block_size, kv_heads, head_dim]
  float* v(int64_t layer) { return v_[layer].data(); }  // [num_blocks, block_size, kv_heads, head_dim]

 private:
  KvCacheShape shape_;
  std::vector<std::vector<float>> k_;
  std::vector<std::vector<float>> v_;
};

}  // namespace tessera
