#include "model/layers/attention_block.h"

#include <cmath>

#include "backend/cpu/ops.h"

namespace tessera {

Result<AttentionBlock> AttentionBlock::load(const WeightStore& store, WeightScheme scheme,
                                            const ModelConfig& c, int64_t layer) {
  AttentionBlock b;
  b.config_ = &c;
  b.layer_ = layer;
  const int64_t q_dim = c.num_attention_heads * c.head_dim;
  const int64_t kv_dim = c.num_key_value_heads * c.head_dim;
  auto name = [&](WeightRole r) { return weight_name(scheme, r, layer); };
  auto bias = [&](WeightRole r) { return c.attention_bias ? name(r) : std::string(); };
  auto q = Linear::load(store, name(WeightRole::kQ), bias(WeightRole::kQBias), q_dim, c.hidden_size);
  if (!q.ok()) return q.status();
  auto k = Linear::load(store, name(WeightRole::kK), bias(WeightRole::kKBias), kv_dim, c.hidden_size);
  if (!k.ok()) return k.status();
  auto v = Linear::load(store, name(WeightRole::kV), bias(WeightRole::kVBias), kv_dim, c.hidden_size);
  if (!v.ok()) return v.status();
  auto o = Linear::load(store, name(WeightRole::kO), "", c.hidden_size, q_dim);
  if (!o.ok()) return o.status();
  b.q_proj_ = std::move(*q);
  b.k_proj_ = std::move(*k);
  b.v_proj_ = std::move(*v);
  b.o_proj_ = std::move(*o);
  if (c.qk_norm) {
    auto qn = load_vector(store, name(WeightRole::kQNorm), c.head_dim);
    if (!qn.ok()) return qn.status();
    auto kn = load_vector(store, name(WeightRole::kKNorm), c.head_dim);
    if (!kn.ok()) return kn.status();
    b.q_norm_ = std::move(*qn);
    b.k_norm_ = std::move(*kn);
  }
  return b;
}

void AttentionBlock::forward(const float* x, const ForwardBatch& batch, KvCache& cache,
                             const float* inv_freq, AttentionScratch& s, float* out) const {
  const ModelConfig& c = *config_;
  const int64_t n = batch.num_tokens();
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  s.q.resize(n * nh * hd);
  s.k.resize(n * nkv * hd);
  s.v.resize(n * nkv * hd);
  s.attn.resize(n * nh * hd);
  Linear::forward_shared_input(x, n, {{&q_proj_, s.q.data()}, {&k_proj_, s.k.data()}, {&v_proj_, s.v.data()}});
  if (!q_norm_.empty()) {
    const float eps = static_cast<float>(c.rms_norm_eps);
    cpu::rms_norm(s.q.data(), q_norm_.data(), eps, n * nh, hd, s.q.data());
    cpu::rms_norm(s.k.data(), k_norm_.data(), eps, n * nkv, hd, s.k.data());
  }
  cpu::apply_rope(s.q.data(), batch.positions.data(), n, nh, hd, inv_freq, c.rope_layout);
  cpu::apply_rope(s.k.data(), batch.positions.data(), n, nkv, hd, inv_freq, c.rope_layout);
  cpu::write_kv_cache(s.k.data(), s.v.data(), batch, nkv * hd, cache.k(layer_), cache.v(layer_), cache.dtype());
  cpu::AttentionShape shape;
  shape.num_heads = nh;
  shape.num_kv_heads = nkv;
  shape.head_dim = hd;
  shape.block_size = cache.shape().block_size;
  shape.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  shape.sliding_window = c.sliding_window.value_or(0);
  cpu::paged_attention(s.q.data(), cache.k(layer_), cache.v(layer_), batch, shape, s.attn.data(), cache.dtype());
  o_proj_.forward(s.attn.data(), n, out);
}

}  // namespace tessera
