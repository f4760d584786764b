// Paged KV cache storage on the host: per layer, K and V as
// [num_blocks, block_size, num_kv_heads, head_dim] fp32. Block 0 is the null block,
// never handed to a sequence. Which blocks a sequence owns is the block manager's job.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "common/check.h"

namespace tessera {

struct KvCacheShape {
  int64_t num_layers = 0;
  int64_t num_blocks = 0;
  int64_t block_size = 16;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t dtype_bytes = 4;  // fp32 on the host, bf16 (2) on CUDA
  int64_t kv_dim() const { return num_kv_heads * head_dim; }
  int64_t bytes() const { return 2 * num_layers * num_blocks * block_size * kv_dim() * dtype_bytes; }
};

class KvCache {
 public:
  // Storage comes from calloc: large blocks are mapped lazily by the OS, so memory is only
  // resident once blocks are written.
  explicit KvCache(const KvCacheShape& shape) : shape_(shape) {
    TESSERA_CHECK_MSG(shape.dtype_bytes == 4, "the host KV cache is fp32");
    const size_t per_layer = static_cast<size_t>(shape.num_blocks * shape.block_size * shape.kv_dim());
    for (int64_t l = 0; l < shape.num_layers; ++l) {
      k_.emplace_back(static_cast<float*>(std::calloc(per_layer, sizeof(float))));
      v_.emplace_back(static_cast<float*>(std::calloc(per_layer, sizeof(float))));
      TESSERA_CHECK_MSG(k_.back() && v_.back(), "KV cache allocation failed");
    }
  }
  const KvCacheShape& shape() const { return shape_; }
  float* k(int64_t layer) { return k_[layer].get(); }  // [num_blocks, block_size, kv_heads, head_dim]
  float* v(int64_t layer) { return v_[layer].get(); }  // [num_blocks, block_size, kv_heads, head_dim]

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  KvCacheShape shape_;
  std::vector<std::unique_ptr<float, Free>> k_;
  std::vector<std::unique_ptr<float, Free>> v_;
};

}  // namespace tessera
