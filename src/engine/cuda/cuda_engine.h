// The CUDA backend behind EngineArgs::device: device discovery and the memory plan that
// builds an EngineCore over a CudaModelRunner. No CUDA types here, so host-only code can
// include it (compiled when TESSERA_HAVE_CUDA is defined).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "config/engine_config.h"
#include "engine/engine_core.h"
#include "model/layers/decoder_model.h"

namespace tessera::cuda {

// Empty when a CUDA device is usable, else why not.
std::string device_unavailable_reason();

// Copies the model's weights to device 0 and plans its memory before the first request:
// weights, then step buffers for config's budgets, then the KV cache fills what
// gpu_memory_utilization leaves of the device (or exactly cache.kv_cache_memory when set).
// Prints the plan on stderr with config.log_stats.
Result<std::unique_ptr<EngineCore>> create_cuda_engine(const DecoderModel& model, EngineConfig config);

}  // namespace tessera::cuda
