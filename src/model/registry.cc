#include "model/registry.h"

namespace tessera {

ModelBuilder find_model_builder(const std::string& architecture) {
  static const std::pair<const char*, ModelBuilder> kBuilders[] = {
      {"llama", &build_llama},
      {"mistral", &build_mistral},
      {"qwen2", &build_qwen2},
      {"qwen3", &build_qwen3},
      {"phi3", &build_phi3},
  };
  for (const auto& [name, builder] : kBuilders) {
    if (architecture == name) return builder;
  }
  return nullptr;
}

}  // namespace tessera
