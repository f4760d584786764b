#include "model/decoder_definition.h"

namespace tessera {

Status pre_norm_decoder(const ModelConfig& c, DecoderBackend& b) {
  TESSERA_RETURN_IF_ERROR(b.embed());
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    TESSERA_RETURN_IF_ERROR(b.attention_block(l));
    TESSERA_RETURN_IF_ERROR(b.gated_mlp_block(l));
  }
  return b.final_norm();
}

}  // namespace tessera
