// Qwen2 / Qwen2.5: the Llama block with biases on the q/k/v projections.
#include "model/layers/decoder_model.h"
#include "model/registry.h"

namespace tessera {

Result<std::unique_ptr<Model>> build_qwen2(ModelConfig c, std::shared_ptr<const WeightStore> store,
                                           WeightScheme scheme) {
  c.qk_norm = false;
  if (store->find(weight_name(scheme, WeightRole::kQBias, 0)) == nullptr) {
    return Status::error(store->source() + ": Qwen2 checkpoint lacks q/k/v biases ('" +
                         weight_name(scheme, WeightRole::kQBias, 0) + "')");
  }
  c.attention_bias = true;
  return DecoderModel::create(std::move(c), std::move(store), scheme);
}

}  // namespace tessera
