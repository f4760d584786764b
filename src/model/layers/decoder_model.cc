#include "model/layers/decoder_model.h"

#include <cstring>

#include "backend/cpu/ops.h"

namespace tessera {

Result<std::unique_ptr<Model>> DecoderModel::create(ModelConfig config,
                                                    std::shared_ptr<const WeightStore> store,
                                                    WeightScheme scheme) {
  auto m = std::unique_ptr<DecoderModel>(new DecoderModel());
  m->config_ = std::move(config);
  m->store_ = std::move(store);
  const ModelConfig& c = m->config_;
  const WeightStore& s = *m->store_;

  const std::string emb_name = weight_name(scheme, WeightRole::kEmbedding);
  const TensorView* emb = s.find(emb_name);
  if (emb == nullptr) return Status::error(s.source() + ": missing tensor '" + emb_name + "'");
  if (emb->shape.size() != 2 || emb->shape[1] != c.hidden_size || emb->shape[0] < c.vocab_size) {
    return Status::error(s.source() + ": tensor '" + emb_name + "' has shape " +
                         shape_string(emb->shape) + ", expected [" + std::to_string(c.vocab_size) +
                         ", " + std::to_string(c.hidden_size) + "]");
  }
  if (emb->dtype == DType::kI32) return Status::error(s.source() + ": integer embedding table");
  m->embedding_ = *emb;

  const std::string head_name = c.tie_word_embeddings || s.find(weight_name(scheme, WeightRole::kLmHead)) == nullptr
                                    ? emb_name
                                    : weight_name(scheme, WeightRole::kLmHead);
  auto head = Linear::load(s, head_name, "", emb->shape[0], c.hidden_size);
  if (!head.ok()) return head.status();
  m->lm_head_ = std::move(*head);

  auto norm = load_vector(s, weight_name(scheme, WeightRole::kFinalNorm), c.hidden_size);
  if (!norm.ok()) return norm.status();
  m->final_norm_ = std::move(*norm);

  std::vector<float> freq_factors;
  const std::string freqs_name = weight_name(scheme, WeightRole::kRopeFreqs);
  if (!freqs_name.empty() && s.find(freqs_name) != nullptr) {
    auto f = load_vector(s, freqs_name, c.head_dim / 2);
    if (!f.ok()) return f.status();
    freq_factors = std::move(*f);
  }
  m->inv_freq_.resize(c.head_dim / 2);
  cpu::rope_inv_freq(c, freq_factors.empty() ? nullptr : freq_factors.data(), m->inv_freq_.data());

  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    auto attn_norm = load_vector(s, weight_name(scheme, WeightRole::kAttnNorm, l), c.hidden_size);
    if (!attn_norm.ok()) return attn_norm.status();
    auto ffn_norm = load_vector(s, weight_name(scheme, WeightRole::kFfnNorm, l), c.hidden_size);
    if (!ffn_norm.ok()) return ffn_norm.status();
    auto attention = AttentionBlock::load(s, scheme, m->config_, l);
    if (!attention.ok()) return attention.status();
    auto mlp = GatedMlp::load(s, scheme, c, l);
    if (!mlp.ok()) return mlp.status();
    m->layers_.push_back(Layer{std::move(*attn_norm), std::move(*ffn_norm),
                               std::move(*attention), std::move(*mlp)});
  }
  return std::unique_ptr<Model>(std::move(m));
}

void DecoderModel::forward(const ForwardBatch& batch, KvCache& cache, float* logits) {
  const int64_t n = batch.num_tokens();
  const int64_t d = config_.hidden_size;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  hidden_.resize(n * d);
  normed_.resize(n * d);
  branch_.resize(n * d);
  cpu::embedding(embedding_, batch.token_ids.data(), n, hidden_.data());
  for (const Layer& layer : layers_) {
    cpu::rms_norm(hidden_.data(), layer.attn_norm.data(), eps, n, d, normed_.data());
    layer.attention.forward(normed_.data(), batch, cache, inv_freq_.data(), attn_scratch_,
                            branch_.data());
    cpu::add_inplace(hidden_.data(), branch_.data(), n * d);
    cpu::rms_norm(hidden_.data(), layer.ffn_norm.data(), eps, n, d, normed_.data());
    layer.mlp.forward(normed_.data(), n, mlp_scratch_, branch_.data());
    cpu::add_inplace(hidden_.data(), branch_.data(), n * d);
  }
  // Only the rows that need logits go through the final norm and the LM head.
  const int64_t num_logits = static_cast<int64_t>(batch.logits_indices.size());
  if (num_logits == 0) return;
  selected_.resize(num_logits * d);
  for (int64_t i = 0; i < num_logits; ++i) {
    std::memcpy(selected_.data() + i * d, hidden_.data() + int64_t{batch.logits_indices[i]} * d,
                sizeof(float) * d);
  }
  cpu::rms_norm(selected_.data(), final_norm_.data(), eps, num_logits, d, selected_.data());
  if (lm_head_.out_features() == config_.vocab_size) {
    lm_head_.forward(selected_.data(), num_logits, logits);
    return;
  }
  // Padded embedding tables: compute all rows, keep the first vocab_size of each.
  std::vector<float>& full = padded_logits_;
  full.resize(num_logits * lm_head_.out_features());
  lm_head_.forward(selected_.data(), num_logits, full.data());
  for (int64_t i = 0; i < num_logits; ++i) {
    std::memcpy(logits + i * config_.vocab_size, full.data() + i * lm_head_.out_features(),
                sizeof(float) * config_.vocab_size);
  }
}

}  // namespace tessera
