// EngineArgs: what a user sets (vLLM's names and defaults), flat as the command line. The
// one place of the engine's defaults: resolve_engine_config (src/config/engine_config.h)
// turns it into the resolved, nested EngineConfig the engine runs by.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tessera/tuning.h"

namespace tessera {

struct EngineArgs {
  // A model directory, .safetensors or .gguf, or a Hugging Face Hub name ("ORG/NAME", or
  // "ORG/NAME/FILE.gguf"): from the Hub's local cache, downloaded into it when missing.
  std::string model;
  std::string tokenizer;           // path or Hub name; default: the model's own
  std::string revision;            // of a Hub model: branch, tag or commit; "": main
  std::string tokenizer_revision;  // of a Hub tokenizer; "": main
  std::string download_dir;        // the Hub cache to use; "": $HF_HUB_CACHE, else $HF_HOME/hub, ...
  int32_t block_size = 16;
  // Compute type of weights and activations (vLLM's --dtype): "auto" (the checkpoint's: float16
  // stays float16; bfloat16, float32 and quantized checkpoints run bfloat16 on CUDA and as
  // stored on the CPU), "bfloat16", "float16" / "half", or "float32" / "float" (the CPU only).
  // The CPU computes in fp32 over weights stored in this type.
  std::string dtype = "auto";
  std::string device = "auto";  // "cuda", "cpu", or "auto": CUDA when a device is usable
  // Bytes of K/V storage, reserved at start; 0: on the CPU 1 GiB, or what max_num_seqs
  // sequences of max_model_len tokens need if less; on CUDA from gpu_memory_utilization.
  int64_t kv_cache_memory = 0;
  // Element type of cached K and V (vLLM's --kv-cache-dtype): "auto" (CUDA: the compute dtype;
  // CPU: the weights' precision, float16 for quantized weights, as llama.cpp caches them),
  // "float32", "float16" or "bfloat16" (the CPU's choices; CUDA's cache is the compute dtype).
  std::string kv_cache_dtype = "auto";
  double gpu_memory_utilization = 0.9;  // share of the device's memory this engine may use (CUDA)
  // GiB of the weights (vLLM's cpu_offload_gb) kept in pinned host memory, which the GPU reads
  // over PCIe each step (CUDA; the CPU's weights are in host memory anyway). 0: none.
  double cpu_offload_gb = 0.0;
  // GiB of host memory for the host tier of the prefix cache (KV offload): blocks the device
  // evicts are kept there and loaded back on a prefix hit (a preempted request's too). 0: none.
  double kv_offloading_size = 0.0;
  bool enforce_eager = false;           // CUDA: no graphs (every step launched kernel by kernel)
  int32_t max_model_len = 0;                   // 0: the model's maximum
  int32_t max_num_seqs = 256;
  int32_t max_num_batched_tokens = 0;  // 0: 2048, or max(max_model_len, 2048) without chunked prefill
  bool enable_prefix_caching = true;
  bool enable_chunked_prefill = true;
  // Schedule step N+1 while step N runs on a device, its sampled tokens feeding N+1 there
  // (tessera serve turns it off by default: arrivals wait one step longer).
  bool async_scheduling = true;
  std::optional<uint64_t> seed;  // default seed of requests without one
  bool disable_progress_bar = false;
  bool disable_log_stats = false;  // start-up lines (KV cache plan) on stderr
  std::optional<Tuning> tuning;    // kernel and shape choices; unset: from the TESSERA_* environment
  Profiling profiling;             // where time goes, printed when the engine ends
};

}  // namespace tessera
