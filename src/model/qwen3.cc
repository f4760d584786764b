// Qwen3: the Llama block with a per-head RMSNorm on q and k before RoPE, and an explicit
// head_dim that may differ from hidden_size / num_heads.
#include "model/layers/decoder_model.h"
#include "model/registry.h"

namespace tessera {

Result<std::unique_ptr<Model>> build_qwen3(ModelConfig c, std::shared_ptr<const WeightStore> store,
                                           WeightScheme scheme) {
  c.qk_norm = true;
  return DecoderModel::create(std::move(c), std::move(store), scheme);
}

}  // namespace tessera
