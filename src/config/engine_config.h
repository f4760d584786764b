// EngineConfig: the engine's knobs (vLLM's names), validated against the model before the
// first request; the KV cache is planned from kv_cache_memory here, once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "config/model_config.h"
#include "kv/kv_cache.h"
#include "tessera/tuning.h"

namespace tessera {

inline constexpr int64_t kDefaultKvCacheMemory = int64_t{1} << 30;  // the host KV cache's default

struct EngineConfig {
  int32_t block_size = 16;                  // --block-size
  // --kv-cache-memory, bytes of K/V storage; 0: kDefaultKvCacheMemory, or less when
  // max_num_seqs sequences of max_model_len tokens need less.
  int64_t kv_cache_memory = 0;
  int64_t kv_dtype_bytes = 4;                  // bytes per cached K or V element: 4 (host fp32), 2 (CUDA bf16)
  int64_t kv_offload_memory = 0;               // --kv-offloading-size, bytes of the host tier (0: none)
  int32_t max_model_len = 0;                // --max-model-len; 0: the model's maximum
  int32_t max_num_seqs = 256;               // --max-num-seqs
  // --max-num-batched-tokens; 0: vLLM's default, 2048, or max(max_model_len, 2048) without
  // chunked prefill (a prompt must then fit one step's budget).
  int32_t max_num_batched_tokens = 0;
  bool enable_prefix_caching = true;        // --enable-prefix-caching / --no-enable-prefix-caching
  bool enable_chunked_prefill = true;       // --enable-chunked-prefill / --no-enable-chunked-prefill
  // --async-scheduling / --no-async-scheduling: with a device runner whose sampled tokens
  // stay on the device, step N+1 is scheduled and queued before step N's tokens reach the
  // host (Scheduler::schedule's look_ahead), so the device never waits for the host.
  bool async_scheduling = true;
  std::optional<uint64_t> seed;             // --seed: default seed of requests without one
  Tuning tuning;                            // resolved: EngineArgs::tuning or the environment's
  Profiling profiling;                      // --profile
};

// The token budget of one step for a (resolved) max_model_len.
int32_t resolve_max_num_batched_tokens(const EngineConfig& config, int32_t max_model_len);

// The KV cache a config gives for a model, and what it allows.
struct KvCachePlan {
  KvCacheShape shape;            // num_blocks includes the null block
  int32_t max_model_len = 0;     // resolved
  int32_t max_num_batched_tokens = 0;  // resolved
  int64_t bytes_per_block = 0;
  double max_concurrency = 0.0;  // requests of max_model_len tokens that fit at once
  int32_t num_host_blocks = 0;   // the host tier of the prefix cache (KV offload), blocks of bytes_per_block
  std::string describe() const;  // one line for start-up logs
};

// Fails (with what to change) when the memory cannot hold one request of max_model_len
// tokens, a knob is out of range, or knobs together would admit a request that can never be
// scheduled (without chunked prefill, a step budget below max_model_len).
Result<KvCachePlan> plan_kv_cache(const EngineConfig& config, const ModelConfig& model);

}  // namespace tessera
