#include "model/layers/weight_names.h"

namespace tessera {

std::string weight_name(WeightScheme scheme, WeightRole role, int64_t layer) {
  const bool hf = scheme == WeightScheme::kHuggingFace;
  const std::string l = std::to_string(layer);
  const std::string hf_layer = "model.layers." + l + ".";
  const std::string gg_layer = "blk." + l + ".";
  switch (role) {
    case WeightRole::kEmbedding: return hf ? "model.embed_tokens.weight" : "token_embd.weight";
    case WeightRole::kFinalNorm: return hf ? "model.norm.weight" : "output_norm.weight";
    case WeightRole::kLmHead: return hf ? "lm_head.weight" : "output.weight";
    case WeightRole::kRopeFreqs: return hf ? "" : "rope_freqs.weight";
    case WeightRole::kAttnNorm: return hf ? hf_layer + "input_layernorm.weight" : gg_layer + "attn_norm.weight";
    case WeightRole::kQ: return hf ? hf_layer + "self_attn.q_proj.weight" : gg_layer + "attn_q.weight";
    case WeightRole::kK: return hf ? hf_layer + "self_attn.k_proj.weight" : gg_layer + "attn_k.weight";
    case WeightRole::kV: return hf ? hf_layer + "self_attn.v_proj.weight" : gg_layer + "attn_v.weight";
    case WeightRole::kO: return hf ? hf_layer + "self_attn.o_proj.weight" : gg_layer + "attn_output.weight";
    case WeightRole::kQBias: return hf ? hf_layer + "self_attn.q_proj.bias" : gg_layer + "attn_q.bias";
    case WeightRole::kKBias: return hf ? hf_layer + "self_attn.k_proj.bias" : gg_layer + "attn_k.bias";
    case WeightRole::kVBias: return hf ? hf_layer + "self_attn.v_proj.bias" : gg_layer + "attn_v.bias";
    case WeightRole::kQNorm: return hf ? hf_layer + "self_attn.q_norm.weight" : gg_layer + "attn_q_norm.weight";
    case WeightRole::kKNorm: return hf ? hf_layer + "self_attn.k_norm.weight" : gg_layer + "attn_k_norm.weight";
    case WeightRole::kFfnNorm: return hf ? hf_layer + "post_attention_layernorm.weight" : gg_layer + "ffn_norm.weight";
    case WeightRole::kGate: return hf ? hf_layer + "mlp.gate_proj.weight" : gg_layer + "ffn_gate.weight";
    case WeightRole::kUp: return hf ? hf_layer + "mlp.up_proj.weight" : gg_layer + "ffn_up.weight";
    case WeightRole::kDown: return hf ? hf_layer + "mlp.down_proj.weight" : gg_layer + "ffn_down.weight";
  }
  return "";
}

}  // namespace tessera
