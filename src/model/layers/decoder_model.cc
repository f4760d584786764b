#include "model/layers/decoder_model.h"

#include <cstring>

#include "backend/cpu/ops.h"
#include "common/check.h"

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

// One forward pass's ops on the CPU: the residual stream in hidden_, fp32 throughout.
class DecoderModel::CpuPass : public DecoderBackend {
 public:
  CpuPass(DecoderModel& m, const ForwardBatch& batch, KvCache& cache)
      : m_(m), batch_(batch), cache_(cache), n_(batch.num_tokens()), d_(m.config_.hidden_size),
        eps_(static_cast<float>(m.config_.rms_norm_eps)) {
    m_.hidden_.resize(n_ * d_);
    m_.normed_.resize(n_ * d_);
    m_.branch_.resize(n_ * d_);
  }
  Status embed() override {
    cpu::embedding(m_.embedding_, batch_.token_ids.data(), n_, m_.hidden_.data());
    return Status();
  }
  Status attention_block(int64_t l) override {
    const Layer& layer = m_.layers_[l];
    cpu::rms_norm(m_.hidden_.data(), layer.attn_norm.data(), eps_, n_, d_, m_.normed_.data());
    layer.attention.forward(m_.normed_.data(), batch_, cache_, m_.inv_freq_.data(), m_.attn_scratch_,
                            m_.branch_.data());
    cpu::add_inplace(m_.hidden_.data(), m_.branch_.data(), n_ * d_);
    return Status();
  }
  Status gated_mlp_block(int64_t l) override {
    const Layer& layer = m_.layers_[l];
    cpu::rms_norm(m_.hidden_.data(), layer.ffn_norm.data(), eps_, n_, d_, m_.normed_.data());
    layer.mlp.forward(m_.normed_.data(), n_, m_.mlp_scratch_, m_.branch_.data());
    cpu::add_inplace(m_.hidden_.data(), m_.branch_.data(), n_ * d_);
    return Status();
  }
  // Only the rows that need logits go through the final norm (into selected_).
  Status final_norm() override {
    const int64_t rows = static_cast<int64_t>(batch_.logits_indices.size());
    m_.selected_.resize(rows * d_);
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(m_.selected_.data() + i * d_, m_.hidden_.data() + int64_t{batch_.logits_indices[i]} * d_,
                  sizeof(float) * d_);
    }
    cpu::rms_norm(m_.selected_.data(), m_.final_norm_.data(), eps_, rows, d_, m_.selected_.data());
    return Status();
  }

 private:
  DecoderModel& m_;
  const ForwardBatch& batch_;
  KvCache& cache_;
  const int64_t n_, d_;
  const float eps_;
};

DType DecoderModel::weight_dtype() const {
  // The attention projections' storage is the checkpoint's precision (embeddings and heads
  // are often kept wider in quantized files).
  return layers_.empty() ? embedding_.dtype : layers_.front().attention.k_proj().weight().dtype;
}

KvDtype DecoderModel::auto_kv_dtype() const {
  switch (weight_dtype()) {
    case DType::kF32:
      return KvDtype::kFloat32;
    case DType::kBF16:
      return KvDtype::kBfloat16;
    default:  // float16 and every quantized type
      return KvDtype::kFloat16;
  }
}

void DecoderModel::forward(const ForwardBatch& batch, KvCache& cache, float* logits) {
  CpuPass pass(*this, batch, cache);
  const Status s = definition_(config_, pass);
  TESSERA_CHECK_MSG(s.ok(), s.message().c_str());  // the CPU ops do not fail
  const int64_t num_logits = static_cast<int64_t>(batch.logits_indices.size());
  if (num_logits == 0) return;
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
