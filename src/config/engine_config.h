// EngineConfig: the engine's configuration, resolved once from EngineArgs (which hold the
// only defaults) against the model before the first request, and nested as vLLM's: the
// scheduler's budgets, the KV cache's, the device's. Nothing below reads EngineArgs or
// resolves a default again; the KV cache is planned from it here, once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "config/model_config.h"
#include "kv/kv_cache.h"
#include "tensor/dtype.h"
#include "tessera/engine_args.h"
#include "tessera/tuning.h"

namespace tessera {

inline constexpr int64_t kDefaultKvCacheMemory = int64_t{1} << 30;  // the host KV cache's default

// Resolved values only: a field is what the engine uses, never "0 for the default".
struct SchedulerConfig {
  int32_t max_num_batched_tokens = 0;  // token budget of one step
  int32_t max_num_seqs = 0;            // running requests at once
  int32_t max_model_len = 0;           // prompt + output tokens of one request
  bool enable_chunked_prefill = false; // else a prompt is admitted only when it fits one step whole
  // With a device runner whose sampled tokens stay on the device, step N+1 is scheduled and
  // queued before step N's tokens reach the host (Scheduler::schedule's look_ahead).
  bool async_scheduling = false;
};

struct CacheConfig {
  int32_t block_size = 0;              // tokens per KV block
  // Bytes of K/V storage; 0 until the device's memory plan fixes it (CPU: kDefaultKvCacheMemory,
  // capped at what max_num_seqs sequences of max_model_len tokens use; CUDA: what
  // gpu_memory_utilization leaves).
  int64_t kv_cache_memory = 0;
  // Element type of cached K and V; unset ("auto") until the device's set-up fixes it (the
  // CPU: the model's auto_kv_dtype; CUDA: bfloat16).
  std::optional<KvDtype> kv_dtype;
  int64_t kv_offload_memory = 0;       // bytes of the host tier of the prefix cache (0: none)
  bool enable_prefix_caching = false;
};

struct DeviceConfig {
  std::string device;                  // as asked: "cuda", "cpu" or "auto"
  double gpu_memory_utilization = 0.0; // share of the device's memory this engine may use
  int64_t cpu_offload_bytes = 0;       // of the weights, kept in mapped host memory (CUDA)
  bool use_cuda_graphs = false;        // not enforce_eager
};

struct EngineConfig {
  // Compute type of weights and activations (vLLM's ModelConfig.dtype): kBF16, kF16 or kF32
  // (CPU only), resolved by resolve_dtype once the device is known.
  DType dtype = DType::kBF16;
  SchedulerConfig scheduler;
  CacheConfig cache;
  DeviceConfig device;
  std::optional<uint64_t> seed;  // default seed of requests without one
  Tuning tuning;                 // EngineArgs::tuning, or the TESSERA_* environment's
  Profiling profiling;
  bool log_stats = false;        // start-up lines on stderr
};

// Checks every knob and resolves the defaults that depend on the model (max_model_len: the
// model's maximum; max_num_batched_tokens: 2048, or max(max_model_len, 2048) without chunked
// prefill). Fails with what to change when a knob is out of range or knobs together would
// admit a request that can never be scheduled (without chunked prefill, a step budget below
// max_model_len).
Result<EngineConfig> resolve_engine_config(const EngineArgs& args, const ModelConfig& model);

// EngineArgs::dtype for a checkpoint whose layers store `stored` (Model::weight_dtype) on
// `device` ("cuda" or "cpu"): auto keeps float16 and bfloat16; float32 and quantized
// checkpoints run bfloat16 on CUDA, and on the CPU stay as stored (float32; quantized: kF16,
// the precision llama.cpp computes their activations' caches in). Fails naming the value for
// an unknown name or float32 on CUDA.
Result<DType> resolve_dtype(const std::string& dtype, DType stored, const std::string& device);

// The KV cache a config gives for a model, and what it allows.
struct KvCachePlan {
  KvCacheShape shape;            // num_blocks includes the null block
  int64_t bytes_per_block = 0;
  double max_concurrency = 0.0;  // requests of max_model_len tokens that fit at once
  int32_t num_host_blocks = 0;   // the host tier of the prefix cache (KV offload), blocks of bytes_per_block
  std::string describe(int32_t max_model_len) const;  // one line for start-up logs
};

// Fails (with what to change) when the memory cannot hold one request of max_model_len tokens.
Result<KvCachePlan> plan_kv_cache(const EngineConfig& config, const ModelConfig& model);

}  // namespace tessera
