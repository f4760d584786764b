// Phi-3 / Phi-3.5-mini-class dense models (Phi3ForCausalLM): the Llama block with q/k/v in one
// matrix (qkv_proj: q rows, then k, then v) and gate/up in one (gate_up_proj: gate rows, then
// up). The decoder reads the parts as row slices of the fused tensors, so nothing is copied
// and every backend runs it as it runs Llama. Sliding-window attention follows the config;
// LongRoPE and partial rotary embeddings are refused when the config is read.
#include <map>

#include "model/layers/decoder_model.h"
#include "model/registry.h"

namespace tessera {
namespace {

// The checkpoint's tensors plus the q/k/v and gate/up slices under the names the decoder
// loads (weight_names.h).
class FusedPhi3Weights : public WeightStore {
 public:
  static Result<std::shared_ptr<const WeightStore>> create(std::shared_ptr<const WeightStore> base,
                                                           const ModelConfig& c) {
    auto w = std::shared_ptr<FusedPhi3Weights>(new FusedPhi3Weights(std::move(base)));
    const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
    const int64_t inter = c.intermediate_size;
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
      const std::string prefix = "model.layers." + std::to_string(l) + ".";
      TESSERA_RETURN_IF_ERROR(w->split(prefix + "self_attn.qkv_proj.weight", c.hidden_size,
                                       {{WeightRole::kQ, q}, {WeightRole::kK, kv}, {WeightRole::kV, kv}}, l));
      TESSERA_RETURN_IF_ERROR(w->split(prefix + "mlp.gate_up_proj.weight", c.hidden_size,
                                       {{WeightRole::kGate, inter}, {WeightRole::kUp, inter}}, l));
    }
    return std::shared_ptr<const WeightStore>(std::move(w));
  }

  const TensorView* find(std::string_view name) const override {
    if (auto it = slices_.find(name); it != slices_.end()) return &it->second;
    return base_->find(name);
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> n = base_->names();
    for (const auto& [name, view] : slices_) n.push_back(name);
    return n;
  }
  std::string source() const override { return base_->source(); }

 private:
  explicit FusedPhi3Weights(std::shared_ptr<const WeightStore> base) : base_(std::move(base)) {}

  // Splits the fused matrix `name` [sum of rows, cols] into the roles' row ranges, in order.
  Status split(const std::string& name, int64_t cols, std::initializer_list<std::pair<WeightRole, int64_t>> parts,
               int64_t layer) {
    const TensorView* fused = base_->find(name);
    if (fused == nullptr) return Status::error(base_->source() + ": missing tensor '" + name + "'");
    int64_t rows = 0;
    for (const auto& part : parts) rows += part.second;
    if (fused->shape.size() != 2 || fused->shape[0] != rows || fused->shape[1] != cols) {
      return Status::error(base_->source() + ": tensor '" + name + "' has shape " + shape_string(fused->shape) +
                           ", expected [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
    }
    int64_t first = 0;
    for (const auto& [role, count] : parts) {
      slices_.emplace(weight_name(WeightScheme::kHuggingFace, role, layer), row_slice(*fused, first, count));
      first += count;
    }
    return Status();
  }

  std::shared_ptr<const WeightStore> base_;
  std::map<std::string, TensorView, std::less<>> slices_;
};

}  // namespace

Result<std::unique_ptr<Model>> build_phi3(ModelConfig c, std::shared_ptr<const WeightStore> store,
                                          WeightScheme scheme) {
  if (scheme != WeightScheme::kHuggingFace) {
    return Status::error(store->source() + ": Phi-3 runs from Hugging Face safetensors (its GGUF layout is not supported)");
  }
  c.qk_norm = false;
  auto weights = FusedPhi3Weights::create(std::move(store), c);
  if (!weights.ok()) return weights.status();
  return DecoderModel::create(std::move(c), std::move(*weights), scheme);
}

}  // namespace tessera
