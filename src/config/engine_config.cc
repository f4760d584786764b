#include "config/engine_config.h"

#include <algorithm>
#include <cstdio>

namespace tessera {

std::string KvCachePlan::describe(int32_t max_model_len) const {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "KV cache: %lld blocks of %lld tokens (%.1f MiB, %s); maximum concurrency for %d tokens per request: "
                "%.2fx",
                static_cast<long long>(shape.num_blocks - 1), static_cast<long long>(shape.block_size),
                static_cast<double>(bytes_per_block) * static_cast<double>(shape.num_blocks - 1) / (1 << 20),
                kv_dtype_name(shape.dtype), max_model_len, max_concurrency);
  std::string line = buf;
  if (num_host_blocks > 0) {
    std::snprintf(buf, sizeof(buf), "; KV offload to host memory: %d blocks (%.1f MiB)", num_host_blocks,
                  static_cast<double>(bytes_per_block) * num_host_blocks / (1 << 20));
    line += buf;
  }
  return line;
}

Result<EngineConfig> resolve_engine_config(const EngineArgs& a, const ModelConfig& m) {
  if (a.block_size < 1 || a.block_size > 1024 || (a.block_size & (a.block_size - 1)) != 0) {
    return Status::error("block_size must be a power of two in [1, 1024], got " + std::to_string(a.block_size));
  }
  if (a.max_num_seqs < 1) return Status::error("max_num_seqs must be at least 1");
  if (a.max_num_batched_tokens < 0) return Status::error("max_num_batched_tokens must be at least 1");
  if (a.max_model_len < 0 || a.max_model_len > m.max_position_embeddings) {
    return Status::error("max_model_len " + std::to_string(a.max_model_len) + " exceeds the model's maximum of " +
                         std::to_string(m.max_position_embeddings));
  }
  if (a.kv_cache_memory < 0) return Status::error("kv_cache_memory must not be negative");
  if (!(a.kv_offloading_size >= 0.0) || a.kv_offloading_size > 1048576.0) {
    return Status::error("kv_offloading_size must be in [0, 1048576] GiB");
  }
  if (a.kv_offloading_size > 0.0 && !a.enable_prefix_caching) {
    return Status::error("KV offloading keeps prefix-cache blocks: it needs prefix caching");
  }
  if (!(a.cpu_offload_gb >= 0.0) || a.cpu_offload_gb > 1048576.0) {
    return Status::error("cpu_offload_gb must be in [0, 1048576] GiB, got " + std::to_string(a.cpu_offload_gb));
  }
  if (!(a.gpu_memory_utilization > 0.0) || a.gpu_memory_utilization > 1.0) {
    return Status::error("gpu_memory_utilization must be in (0, 1], got " + std::to_string(a.gpu_memory_utilization));
  }
  std::optional<KvDtype> kv_dtype;
  if (a.kv_cache_dtype == "float32") {
    kv_dtype = KvDtype::kFloat32;
  } else if (a.kv_cache_dtype == "float16") {
    kv_dtype = KvDtype::kFloat16;
  } else if (a.kv_cache_dtype == "bfloat16") {
    kv_dtype = KvDtype::kBfloat16;
  } else if (a.kv_cache_dtype.rfind("fp8", 0) == 0) {
    return Status::error("kv_cache_dtype " + a.kv_cache_dtype + " (an FP8 KV cache) is not supported yet");
  } else if (a.kv_cache_dtype != "auto") {
    return Status::error("kv_cache_dtype must be auto, float32, float16 or bfloat16, got '" + a.kv_cache_dtype + "'");
  }
  EngineConfig c;
  SchedulerConfig& s = c.scheduler;
  s.max_model_len = a.max_model_len > 0 ? a.max_model_len : static_cast<int32_t>(m.max_position_embeddings);
  if (s.max_model_len < 2) return Status::error("max_model_len must be at least 2");
  s.max_num_seqs = a.max_num_seqs;
  s.enable_chunked_prefill = a.enable_chunked_prefill;
  s.async_scheduling = a.async_scheduling;
  constexpr int32_t kDefaultBatchedTokens = 2048;  // vLLM's
  s.max_num_batched_tokens = a.max_num_batched_tokens > 0 ? a.max_num_batched_tokens
                             : a.enable_chunked_prefill    ? kDefaultBatchedTokens
                                                           : std::max(kDefaultBatchedTokens, s.max_model_len);
  if (!s.enable_chunked_prefill && s.max_num_batched_tokens < s.max_model_len) {
    // A prompt longer than one step's budget could never be scheduled, and everything
    // queued behind it would wait forever.
    return Status::error("max_num_batched_tokens (" + std::to_string(s.max_num_batched_tokens) +
                         ") is smaller than max_model_len (" + std::to_string(s.max_model_len) +
                         ") without chunked prefill, so longer prompts could never run: raise "
                         "--max-num-batched-tokens, lower --max-model-len or enable chunked prefill");
  }
  CacheConfig& k = c.cache;
  k.block_size = a.block_size;
  k.kv_cache_memory = a.kv_cache_memory;
  k.kv_dtype = kv_dtype;
  k.kv_offload_memory = static_cast<int64_t>(a.kv_offloading_size * static_cast<double>(int64_t{1} << 30));
  k.enable_prefix_caching = a.enable_prefix_caching;
  c.device.device = a.device;
  c.device.gpu_memory_utilization = a.gpu_memory_utilization;
  c.device.cpu_offload_bytes = static_cast<int64_t>(a.cpu_offload_gb * static_cast<double>(int64_t{1} << 30));
  c.device.use_cuda_graphs = !a.enforce_eager;
  c.seed = a.seed;
  if (a.tuning) {
    c.tuning = *a.tuning;
  } else {
    auto tuning = tuning_from_environment();
    if (!tuning.ok()) return tuning.status();
    c.tuning = *tuning;
  }
  c.profiling = a.profiling;
  c.log_stats = !a.disable_log_stats;
  return c;
}

Result<DType> resolve_dtype(const std::string& dtype, DType stored, const std::string& device) {
  const bool cuda = device == "cuda";
  if (dtype == "bfloat16" || dtype == "bf16") return DType::kBF16;
  if (dtype == "float16" || dtype == "half" || dtype == "fp16") return DType::kF16;
  if (dtype == "float32" || dtype == "float" || dtype == "fp32") {
    if (cuda) return Status::error("dtype " + dtype + " is not supported on CUDA: use bfloat16 or float16");
    return DType::kF32;
  }
  if (dtype != "auto") {
    return Status::error("dtype must be auto, bfloat16, float16 (half) or float32 (float), got '" + dtype + "'");
  }
  if (stored == DType::kF16 || stored == DType::kBF16) return stored;
  if (cuda) return DType::kBF16;
  return stored == DType::kF32 ? DType::kF32 : DType::kF16;
}

Result<KvCachePlan> plan_kv_cache(const EngineConfig& c, const ModelConfig& m) {
  const CacheConfig& k = c.cache;
  const int32_t max_model_len = c.scheduler.max_model_len;
  KvCachePlan plan;
  plan.shape.num_layers = m.num_hidden_layers;
  plan.shape.block_size = k.block_size;
  plan.shape.num_kv_heads = m.num_key_value_heads;
  plan.shape.head_dim = m.head_dim;
  if (!k.kv_dtype) return Status::error("the KV cache's dtype is not resolved (the device's set-up fixes it)");
  plan.shape.dtype = *k.kv_dtype;
  plan.shape.num_blocks = 1;
  plan.bytes_per_block = plan.shape.bytes();  // one block, all layers, K and V
  const int64_t needed = (max_model_len + k.block_size - 1) / k.block_size;
  // The cache is reserved (resident) at start, so the default takes no more than
  // max_num_seqs full-length sequences can use at once.
  const int64_t budget =
      k.kv_cache_memory > 0
          ? k.kv_cache_memory
          : std::min(kDefaultKvCacheMemory, needed * c.scheduler.max_num_seqs * plan.bytes_per_block);
  const int64_t usable = budget / plan.bytes_per_block;
  if (usable < needed) {
    return Status::error("kv_cache_memory of " + std::to_string(budget) + " bytes holds " +
                         std::to_string(usable * k.block_size) + " tokens, fewer than max_model_len " +
                         std::to_string(max_model_len) + " (" + std::to_string(plan.bytes_per_block / k.block_size) +
                         " bytes per token): raise --kv-cache-memory or lower --max-model-len");
  }
  if (usable > (int64_t{1} << 30)) return Status::error("kv_cache_memory is too large");
  plan.shape.num_blocks = usable + 1;  // + the null block
  if (k.kv_offload_memory > 0) {
    const int64_t host = k.kv_offload_memory / plan.bytes_per_block;
    if (host > (int64_t{1} << 30)) return Status::error("kv_offloading_size is too large");
    plan.num_host_blocks = static_cast<int32_t>(host);
  }
  plan.max_concurrency = static_cast<double>(usable * k.block_size) / max_model_len;
  return plan;
}

}  // namespace tessera
