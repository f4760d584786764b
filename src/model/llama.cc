// Llama 2 / 3 / 3.1 / 3.2 and SmolLM2: pre-norm decoder, GQA, SwiGLU, RoPE (Llama 3
// frequency scaling from config.json or GGUF rope_freqs), tied or untied embeddings.
#include "model/layers/decoder_model.h"
#include "model/registry.h"

namespace tessera {

Result<std::unique_ptr<Model>> build_llama(ModelConfig c, std::shared_ptr<const WeightStore> store,
                                           WeightScheme scheme) {
  c.qk_norm = false;
  return DecoderModel::create(std::move(c), std::move(store), scheme);
}

}  // namespace tessera
