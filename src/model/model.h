// Model: a causal LM that runs one ForwardBatch against a paged KV cache.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "config/model_config.h"
#include "backend/forward_batch.h"
#include "kv/kv_cache.h"
#include "tensor/dtype.h"

namespace tessera {

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;
  // Runs every token of `batch`, writing its K/V into `cache`, and fills
  // logits [batch.logits_indices.size(), vocab_size] for the requested tokens.
  // Token ids must be < vocab_size; the caller validates requests.
  virtual void forward(const ForwardBatch& batch, KvCache& cache, float* logits) = 0;
  // The host KV cache's element type for --kv-cache-dtype auto: the checkpoint's own
  // precision (vLLM's "the model's dtype"; llama.cpp's f16 for quantized weights).
  virtual KvDtype auto_kv_dtype() const { return KvDtype::kFloat32; }
  // The element type the checkpoint stores its layers' weights in (what dtype "auto" keeps).
  virtual DType weight_dtype() const { return DType::kF32; }
};

// Opens a checkpoint: a model directory (config.json + safetensors), a .safetensors file
// (config.json beside it) or a .gguf file. Errors name the file and the problem. With
// float_weights (kF32, kF16 or kBF16), the float tensors are converted to that type at load
// (quantized ones stay as stored).
Result<std::unique_ptr<Model>> load_model(const std::string& path, std::optional<DType> float_weights = std::nullopt);

}  // namespace tessera
