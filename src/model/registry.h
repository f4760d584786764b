// Architecture registry: canonical architecture name -> builder.
#pragma once

#include <memory>
#include <string>

#include "loader/weight_store.h"
#include "model/layers/weight_names.h"
#include "model/model.h"

namespace tessera {

using ModelBuilder = Result<std::unique_ptr<Model>> (*)(ModelConfig config,
                                                        std::shared_ptr<const WeightStore> store,
                                                        WeightScheme scheme);

// Builders, one file per architecture.
Result<std::unique_ptr<Model>> build_llama(ModelConfig, std::shared_ptr<const WeightStore>, WeightScheme);
Result<std::unique_ptr<Model>> build_mistral(ModelConfig, std::shared_ptr<const WeightStore>, WeightScheme);
Result<std::unique_ptr<Model>> build_qwen2(ModelConfig, std::shared_ptr<const WeightStore>, WeightScheme);
Result<std::unique_ptr<Model>> build_qwen3(ModelConfig, std::shared_ptr<const WeightStore>, WeightScheme);
Result<std::unique_ptr<Model>> build_phi3(ModelConfig, std::shared_ptr<const WeightStore>, WeightScheme);

// nullptr for an unknown architecture.
ModelBuilder find_model_builder(const std::string& architecture);

}  // namespace tessera
