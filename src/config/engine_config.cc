#include "config/engine_config.h"

#include <algorithm>
#include <cstdio>

namespace tessera {

std::string KvCachePlan::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "KV cache: %lld blocks of %lld tokens (%.1f MiB); maximum concurrency for %d tokens per request: %.2fx",
                static_cast<long long>(shape.num_blocks - 1), static_cast<long long>(shape.block_size),
                static_cast<double>(bytes_per_block) * static_cast<double>(shape.num_blocks - 1) / (1 << 20),
                max_model_len, max_concurrency);
  std::string line = buf;
  if (num_host_blocks > 0) {
    std::snprintf(buf, sizeof(buf), "; KV offload to host memory: %d blocks (%.1f MiB)", num_host_blocks,
                  static_cast<double>(bytes_per_block) * num_host_blocks / (1 << 20));
    line += buf;
  }
  return line;
}

int32_t resolve_max_num_batched_tokens(const EngineConfig& c, int32_t max_model_len) {
  constexpr int32_t kDefault = 2048;
  if (c.max_num_batched_tokens > 0) return c.max_num_batched_tokens;
  return c.enable_chunked_prefill ? kDefault : std::max(kDefault, max_model_len);
}

Result<KvCachePlan> plan_kv_cache(const EngineConfig& c, const ModelConfig& m) {
  if (c.block_size < 1 || c.block_size > 1024 || (c.block_size & (c.block_size - 1)) != 0) {
    return Status::error("block_size must be a power of two in [1, 1024], got " + std::to_string(c.block_size));
  }
  if (c.max_num_seqs < 1) return Status::error("max_num_seqs must be at least 1");
  if (c.max_num_batched_tokens < 0) return Status::error("max_num_batched_tokens must be at least 1");
  if (c.max_model_len < 0 || c.max_model_len > m.max_position_embeddings) {
    return Status::error("max_model_len " + std::to_string(c.max_model_len) + " exceeds the model's maximum of " +
                         std::to_string(m.max_position_embeddings));
  }
  if (c.kv_cache_memory < 0) return Status::error("kv_cache_memory must not be negative");
  KvCachePlan plan;
  plan.max_model_len = c.max_model_len > 0 ? c.max_model_len : static_cast<int32_t>(m.max_position_embeddings);
  if (plan.max_model_len < 2) return Status::error("max_model_len must be at least 2");
  plan.max_num_batched_tokens = resolve_max_num_batched_tokens(c, plan.max_model_len);
  if (!c.enable_chunked_prefill && plan.max_num_batched_tokens < plan.max_model_len) {
    // A prompt longer than one step's budget could never be scheduled, and everything
    // queued behind it would wait forever.
    return Status::error("max_num_batched_tokens (" + std::to_string(plan.max_num_batched_tokens) +
                         ") is smaller than max_model_len (" + std::to_string(plan.max_model_len) +
                         ") without chunked prefill, so longer prompts could never run: raise "
                         "--max-num-batched-tokens, lower --max-model-len or enable chunked prefill");
  }
  plan.shape.num_layers = m.num_hidden_layers;
  plan.shape.block_size = c.block_size;
  plan.shape.num_kv_heads = m.num_key_value_heads;
  plan.shape.head_dim = m.head_dim;
  plan.shape.dtype_bytes = c.kv_dtype_bytes;
  plan.shape.num_blocks = 1;
  plan.bytes_per_block = plan.shape.bytes();  // one block, all layers, K and V
  const int64_t needed = (plan.max_model_len + c.block_size - 1) / c.block_size;
  // The cache is reserved (resident) at start, so the default takes no more than
  // max_num_seqs full-length sequences can use at once.
  const int64_t budget = c.kv_cache_memory > 0
                             ? c.kv_cache_memory
                             : std::min(kDefaultKvCacheMemory, needed * c.max_num_seqs * plan.bytes_per_block);
  const int64_t usable = budget / plan.bytes_per_block;
  if (usable < needed) {
    return Status::error("kv_cache_memory of " + std::to_string(budget) + " bytes holds " +
                         std::to_string(usable * c.block_size) + " tokens, fewer than max_model_len " +
                         std::to_string(plan.max_model_len) + " (" + std::to_string(plan.bytes_per_block / c.block_size) +
                         " bytes per token): raise --kv-cache-memory or lower --max-model-len");
  }
  if (usable > (int64_t{1} << 30)) return Status::error("kv_cache_memory is too large");
  plan.shape.num_blocks = usable + 1;  // + the null block
  if (c.kv_offload_memory < 0) return Status::error("kv_offloading_size must not be negative");
  if (c.kv_offload_memory > 0) {
    if (!c.enable_prefix_caching) return Status::error("KV offloading keeps prefix-cache blocks: it needs prefix caching");
    const int64_t host = c.kv_offload_memory / plan.bytes_per_block;
    if (host > (int64_t{1} << 30)) return Status::error("kv_offloading_size is too large");
    plan.num_host_blocks = static_cast<int32_t>(host);
  }
  plan.max_concurrency = static_cast<double>(usable * c.block_size) / plan.max_model_len;
  return plan;
}

}  // namespace tessera
