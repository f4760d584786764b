// Paged KV cache storage on the host: per layer, K and V as
// [num_blocks, block_size, num_kv_heads, head_dim] fp32. Block 0 is the null block,
// never handed to a sequence. Which blocks a sequence owns is the block manager's job.
#pragma once

#include <cstdint>
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
  // The storage is resident from construction (mapped with MAP_POPULATE). The block pool
  // hands out free blocks in LRU order, so a long run touches every block sooner or later;
  // reserving it all up front makes the process's memory at start what it keeps, and a
  // machine without room fails here rather than hours later.
  explicit KvCache(const KvCacheShape& shape) : shape_(shape) {
    TESSERA_CHECK_MSG(shape.dtype_bytes == 4, "the host KV cache is fp32");
    const size_t per_layer = static_cast<size_t>(shape.num_blocks * shape.block_size * shape.kv_dim());
    for (int64_t l = 0; l < shape.num_layers; ++l) {
      k_.emplace_back(per_layer);
      v_.emplace_back(per_layer);
    }
  }
  const KvCacheShape& shape() const { return shape_; }
  float* k(int64_t layer) { return k_[layer].data(); }  // [num_blocks, block_size, kv_heads, head_dim]
  float* v(int64_t layer) { return v_[layer].data(); }  // [num_blocks, block_size, kv_heads, head_dim]

 private:
  // Zeroed, resident, page-aligned float storage.
  class ResidentFloats {
   public:
    explicit ResidentFloats(size_t count);
    ResidentFloats(ResidentFloats&& o) noexcept : data_(o.data_), bytes_(o.bytes_) { o.data_ = nullptr, o.bytes_ = 0; }
    ResidentFloats(const ResidentFloats&) = delete;
    ResidentFloats& operator=(const ResidentFloats&) = delete;
    ResidentFloats& operator=(ResidentFloats&&) = delete;
    ~ResidentFloats();
    float* data() const { return data_; }

   private:
    float* data_ = nullptr;
    size_t bytes_ = 0;
  };
  KvCacheShape shape_;
  std::vector<ResidentFloats> k_;
  std::vector<ResidentFloats> v_;
};

}  // namespace tessera
