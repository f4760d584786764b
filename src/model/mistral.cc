// Mistral: the Llama block with optional sliding-window attention.
#include "model/layers/decoder_model.h"
#include "model/registry.h"

namespace tessera {

Result<std::unique_ptr<Model>> build_mistral(ModelConfig c, std::shared_ptr<const WeightStore> store,
                                             WeightScheme scheme) {
  c.qk_norm = false;
  return DecoderModel::create(std::move(c), std::move(store), scheme);
}

}  // namespace tessera
