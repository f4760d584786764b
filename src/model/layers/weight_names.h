// Tensor names of a decoder-only checkpoint in the Hugging Face and the GGUF conventions.
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

enum class WeightScheme { kHuggingFace, kGguf };

enum class WeightRole {
  kEmbedding, kFinalNorm, kLmHead, kRopeFreqs,
  // per layer
  kAttnNorm, kQ, kK, kV, kO, kQBias, kKBias, kVBias, kQNorm, kKNorm,
  kFfnNorm, kGate, kUp, kDown,
};

// Name of a weight; `layer` is ignored for model-level roles. Empty if the scheme has none.
std::string weight_name(WeightScheme scheme, WeightRole role, int64_t layer = -1);

}  // namespace tessera
