// Paged KV cache storage on the host: per layer, K and V as
// [num_blocks, block_size, num_kv_heads, head_dim] elements of the cache's KvDtype. Block 0
// is the null block, never handed to a sequence. Which blocks a sequence owns is the block
// manager's job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/check.h"

namespace tessera {

// The element type of cached K and V. The host cache holds any of them (the CPU attention
// reads each); the CUDA cache is bf16.
enum class KvDtype : uint8_t { kFloat32, kFloat16, kBfloat16 };

inline int64_t kv_dtype_bytes(KvDtype d) { return d == KvDtype::kFloat32 ? 4 : 2; }
const char* kv_dtype_name(KvDtype d);  // "float32", "float16", "bfloat16"

struct KvCacheShape {
  int64_t num_layers = 0;
  int64_t num_blocks = 0;
  int64_t block_size = 16;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  KvDtype dtype = KvDtype::kFloat32;
  int64_t kv_dim() const { return num_kv_heads * head_dim; }
  int64_t dtype_bytes() const { return kv_dtype_bytes(dtype); }
  int64_t bytes() const { return 2 * num_layers * num_blocks * block_size * kv_dim() * dtype_bytes(); }
};

class KvCache {
 public:
  // The storage is resident from construction (mapped with MAP_POPULATE). The block pool
  // hands out free blocks in LRU order, so a long run touches every block sooner or later;
  // reserving it all up front makes the process's memory at start what it keeps, and a
  // machine without room fails here rather than hours later.
  explicit KvCache(const KvCacheShape& shape) : shape_(shape) {
    const size_t per_layer = static_cast<size_t>(shape.num_blocks * shape.block_size * shape.kv_dim()) *
                             static_cast<size_t>(shape.dtype_bytes());
    for (int64_t l = 0; l < shape.num_layers; ++l) {
      k_.emplace_back(per_layer);
      v_.emplace_back(per_layer);
    }
  }
  const KvCacheShape& shape() const { return shape_; }
  KvDtype dtype() const { return shape_.dtype; }
  // [num_blocks, block_size, kv_heads, head_dim] elements of dtype().
  void* k(int64_t layer) { return k_[layer].data(); }
  void* v(int64_t layer) { return v_[layer].data(); }
  // The same as floats (a float32 cache only).
  float* k_f32(int64_t layer) { return as_f32(k_[layer]); }
  float* v_f32(int64_t layer) { return as_f32(v_[layer]); }
  // Bytes of one block of one layer's K (or V).
  size_t block_bytes() const {
    return static_cast<size_t>(shape_.block_size * shape_.kv_dim() * shape_.dtype_bytes());
  }

 private:
  // Zeroed, resident, page-aligned storage.
  class ResidentBytes {
   public:
    explicit ResidentBytes(size_t bytes);
    ResidentBytes(ResidentBytes&& o) noexcept : data_(o.data_), bytes_(o.bytes_) { o.data_ = nullptr, o.bytes_ = 0; }
    ResidentBytes(const ResidentBytes&) = delete;
    ResidentBytes& operator=(const ResidentBytes&) = delete;
    ResidentBytes& operator=(ResidentBytes&&) = delete;
    ~ResidentBytes();
    std::byte* data() const { return data_; }

   private:
    std::byte* data_ = nullptr;
    size_t bytes_ = 0;
  };
  float* as_f32(const ResidentBytes& b) const {
    TESSERA_CHECK_MSG(shape_.dtype == KvDtype::kFloat32, "not a float32 KV cache");
    return reinterpret_cast<float*>(b.data());
  }
  KvCacheShape shape_;
  std::vector<ResidentBytes> k_;
  std::vector<ResidentBytes> v_;
};

}  // namespace tessera
