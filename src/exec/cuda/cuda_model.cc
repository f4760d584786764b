#include "exec/cuda/cuda_model.h"

#include <cmath>
#include <cstdlib>

#include "backend/cuda/fused_ops.h"
#include "backend/cuda/gemv.h"
#include "exec/cuda/weight_upload.h"

namespace tessera::cuda {
namespace {

constexpr int64_t kAlign = 128;  // elements: 256-byte aligned tensors in the arena

int64_t aligned(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

#define TESSERA_GEMM_TRY(expr)                                  \
  do {                                                          \
    if (std::string e_ = (expr); !e_.empty()) return Status::error(e_); \
  } while (0)

}  // namespace

void CudaModel::set_tuning(const Tuning& t) { bulk_decode_tokens_ = std::max<int64_t>(0, t.decode_bulk_tokens); }

// The decode GEMVs' kernel shape (gemv.h's two): steps of up to bulk_decode_tokens_ run every
// GEMV as the bulk variant (q/k/v and o too), larger GEMV steps the cp.async variant 0.
int CudaModel::decode_gemv_variant(bool bulk) { return bulk ? kGemvBulkVariant : 0; }

Status CudaActivations::allocate(const ModelConfig& c, int64_t tokens, int64_t rows, size_t attention_workspace_bytes) {
  max_tokens = tokens;
  max_rows = rows;
  const int64_t qkv_dim = (c.num_attention_heads + 2 * c.num_key_value_heads) * c.head_dim;
  const int64_t q_dim = c.num_attention_heads * c.head_dim;
  const size_t t = static_cast<size_t>(tokens);
  for (auto [buf, count, what] : {std::tuple{&hidden, t * c.hidden_size, "the residual stream"},
                                  std::tuple{&branch, t * c.hidden_size, "activations"},
                                  std::tuple{&qkv, t * qkv_dim, "q/k/v"},
                                  std::tuple{&q, t * q_dim, "queries"},
                                  std::tuple{&attn, t * q_dim, "attention output"},
                                  std::tuple{&gate_up, t * 2 * c.intermediate_size, "the MLP"},
                                  std::tuple{&act, t * c.intermediate_size, "the MLP"},
                                  std::tuple{&selected, static_cast<size_t>(rows * c.hidden_size), "logits rows"}}) {
    if (Status s = buf->allocate(count, what); !s.ok()) return s;
  }
  if (Status s = attention_workspace.allocate(attention_workspace_bytes, "the attention workspace"); !s.ok()) return s;
  // The split merge's arrival counts start at zero (and return to it after every step).
  return cuda_status(cudaMemset(attention_workspace.get(), 0, attention_workspace_bytes), "the attention workspace");
}

Result<std::unique_ptr<CudaModel>> CudaModel::upload(const DecoderModel& model, DType dtype, cudaStream_t stream,
                                                     int64_t offload_bytes) {
  if (dtype != DType::kBF16 && dtype != DType::kF16) {
    return Status::error(std::string("the CUDA backend computes in bfloat16 or float16, not ") +
                         std::string(dtype_name(dtype)));
  }
  auto m = std::unique_ptr<CudaModel>(new CudaModel());
  const ModelConfig& c = model.config();
  m->config_ = c;
  m->dtype_ = dtype;
  m->definition_ = model.definition();
  const int64_t d = c.hidden_size, hd = c.head_dim, inter = c.intermediate_size;
  const int64_t q_rows = c.num_attention_heads * hd, kv_rows = c.num_key_value_heads * hd;
  const int64_t qkv_rows = q_rows + 2 * kv_rows;
  const bool tied = model.lm_head().weight().data == model.embedding().data;
  m->embedding_rows_ = model.embedding().rows();

  // Arena layout: every tensor at an aligned offset; the offloaded layers' linears in a
  // second, host arena.
  int64_t total = 0, host_total = 0;
  auto take = [&total](int64_t n) {
    const int64_t at = total;
    total += aligned(n);
    return at;
  };
  auto take_host = [&host_total](int64_t n) {
    const int64_t at = host_total;
    host_total += aligned(n);
    return at;
  };
  // Whole layers from the last, until at least offload_bytes of linears are offloaded.
  const int64_t layer_linear_bytes = static_cast<int64_t>(sizeof(Elem16)) * (qkv_rows * d + d * q_rows + 3 * inter * d);
  const int64_t num_layers = static_cast<int64_t>(model.layers().size());
  const int64_t offloaded_layers =
      offload_bytes <= 0 ? 0 : std::min(num_layers, (offload_bytes + layer_linear_bytes - 1) / layer_linear_bytes);
  const int64_t emb_at = take(m->embedding_rows_ * d);
  const int64_t head_at = tied ? emb_at : take(c.vocab_size * d);
  const int64_t norm_at = take(d);
  struct Offsets {
    int64_t attn_norm, ffn_norm, qkv, bias = -1, q_norm = -1, k_norm = -1, o, gate_up, down;
    bool host = false;  // qkv, o, gate_up and down are offsets in the host arena
  };
  std::vector<Offsets> offs;
  for (const DecoderModel::Layer& l : model.layers()) {
    Offsets o;
    o.host = static_cast<int64_t>(offs.size()) >= num_layers - offloaded_layers;
    auto take_linear = [&](int64_t n) { return o.host ? take_host(n) : take(n); };
    o.attn_norm = take(d);
    o.ffn_norm = take(d);
    o.qkv = take_linear(qkv_rows * d);
    if (!l.attention.q_proj().bias().empty()) o.bias = take(qkv_rows);
    if (!l.attention.q_norm().empty()) {
      o.q_norm = take(hd);
      o.k_norm = take(hd);
    }
    o.o = take_linear(d * q_rows);
    o.gate_up = take_linear(2 * inter * d);
    o.down = take_linear(d * inter);
    offs.push_back(o);
  }
  if (Status s = m->weights_.allocate(static_cast<size_t>(total), "the model weights"); !s.ok()) return s;
  Elem16* base = m->weights_.get();
  if (host_total > 0) {  // pinned, so the device reads it in place (unified addressing)
    if (Status s = m->host_weights_.allocate(static_cast<size_t>(host_total), "offloaded weights (cpu_offload_gb)");
        !s.ok()) {
      return s;
    }
  }

  WeightUploader up(stream, dtype);
  auto dense = [dtype](const Elem16* w, int64_t out, int64_t in) {
    return dtype == DType::kF16 ? DeviceLinear::dense(as<f16>(w), out, in) : DeviceLinear::dense(as<bf16>(w), out, in);
  };
  if (Status s = up.init(); !s.ok()) return s;
  m->embedding_ = base + emb_at;
  if (Status s = up.upload(model.embedding(), m->embedding_rows_, m->embedding_); !s.ok()) return s;
  m->lm_head_ = dense(base + head_at, c.vocab_size, d);
  if (!tied) {
    if (Status s = up.upload(model.lm_head().weight(), c.vocab_size, base + head_at); !s.ok()) return s;
  }
  m->final_norm_ = base + norm_at;
  if (Status s = up.upload(model.final_norm(), m->final_norm_); !s.ok()) return s;
  for (size_t i = 0; i < offs.size(); ++i) {
    const DecoderModel::Layer& l = model.layers()[i];
    const Offsets& o = offs[i];
    Elem16* linears = o.host ? m->host_weights_.get() : base;  // where qkv, o, gate_up, down live
    CudaLayer cl;
    cl.attn_norm = base + o.attn_norm;
    cl.ffn_norm = base + o.ffn_norm;
    cl.qkv = dense(linears + o.qkv, qkv_rows, d);
    cl.o = dense(linears + o.o, d, q_rows);
    cl.gate_up = dense(linears + o.gate_up, 2 * inter, d);
    cl.down = dense(linears + o.down, d, inter);
    const AttentionBlock& a = l.attention;
    Status s = up.upload(l.attn_norm, cl.attn_norm);
    if (s.ok()) s = up.upload(l.ffn_norm, cl.ffn_norm);
    if (s.ok()) s = up.upload(a.q_proj().weight(), q_rows, linears + o.qkv);
    if (s.ok()) s = up.upload(a.k_proj().weight(), kv_rows, linears + o.qkv + q_rows * d);
    if (s.ok()) s = up.upload(a.v_proj().weight(), kv_rows, linears + o.qkv + (q_rows + kv_rows) * d);
    if (s.ok() && o.bias >= 0) {
      cl.qkv_bias = base + o.bias;
      std::vector<float> bias = a.q_proj().bias();
      bias.insert(bias.end(), a.k_proj().bias().begin(), a.k_proj().bias().end());
      bias.insert(bias.end(), a.v_proj().bias().begin(), a.v_proj().bias().end());
      s = up.upload(bias, cl.qkv_bias);  // staged before it returns
    }
    if (s.ok() && o.q_norm >= 0) {
      cl.q_norm = base + o.q_norm;
      cl.k_norm = base + o.k_norm;
      s = up.upload(a.q_norm(), cl.q_norm);
      if (s.ok()) s = up.upload(a.k_norm(), cl.k_norm);
    }
    if (s.ok()) s = up.upload(a.o_proj().weight(), d, linears + o.o);
    if (s.ok()) s = up.upload(l.mlp.gate().weight(), inter, linears + o.gate_up);
    if (s.ok()) s = up.upload(l.mlp.up().weight(), inter, linears + o.gate_up + inter * d);
    if (s.ok()) s = up.upload(l.mlp.down().weight(), d, linears + o.down);
    if (!s.ok()) return Status::error("layer " + std::to_string(i) + ": " + s.message());
    m->layers_.push_back(cl);
  }
  if (Status s = up.finish(); !s.ok()) return s;
  if (Status s = m->inv_freq_.allocate(model.inv_freq().size(), "RoPE frequencies"); !s.ok()) return s;
  TESSERA_CUDA_TRY(cudaMemcpy(m->inv_freq_.get(), model.inv_freq().data(), model.inv_freq().size() * sizeof(float),
                              cudaMemcpyHostToDevice),
                   "RoPE frequencies");
  return m;
}

bool CudaModel::uses_gemv(int64_t num_tokens) const {
  // Every layer's linears are of one kind and shape: the first layer's answer holds for all.
  if (layers_.empty()) return false;
  const CudaLayer& w = layers_.front();
  return w.qkv.gemv_supported(num_tokens) && w.o.gemv_supported(num_tokens) && w.gate_up.gemv_supported(num_tokens) &&
         w.down.gemv_supported(num_tokens) && lm_head_.gemv_supported(num_tokens);
}

// One forward pass's ops on the device, the DecoderBackend the architecture's definition
// runs over. Few tokens (decode): q/k/v and o as fused GEMVs that stream the weights at the
// memory's speed (the norm in the prologue, the residual add in the epilogue), chained with
// programmatic dependent launch; the MLP as bulk GEMVs at up to bulk_decode_tokens_, else
// through cuBLASLt, which streams the large matrices faster than the cp.async GEMVs (with a
// norm and a SiLU kernel between; docs/benchmarks.md). More tokens: cuBLASLt GEMMs with
// separate norms, each block's output left in act.branch and added into the residual stream
// by the next norm (fused add + norm).
template <typename T>
class CudaModel::Pass : public DecoderBackend {
 public:
  Pass(CudaModel& m, const CudaStep& step, int64_t num_rows, const CudaKvCache& kv, CudaActivations& act,
       cudaStream_t stream)
      : m_(m), c_(m.config_), step_(step), num_rows_(num_rows), kv_(kv), act_(act), stream_(stream),
        n_(step.meta.num_tokens), d_(c_.hidden_size), hd_(c_.head_dim), nh_(c_.num_attention_heads),
        nkv_(c_.num_key_value_heads), inter_(c_.intermediate_size),
        eps_(static_cast<float>(c_.rms_norm_eps)),
        shape_{nh_, nkv_, hd_, kv.block_size, 1.0f / std::sqrt(static_cast<float>(hd_)), c_.sliding_window.value_or(0)},
        small_(m.uses_gemv(n_)), bulk_(small_ && n_ <= m.bulk_decode_tokens_),
        pdl_{.pdl = true, .variant = decode_gemv_variant(bulk_)} {}

  // The KV offload's per-layer store waits: external while capturing, so that a graph waits
  // for each replay's own stores (the flag is invalid outside capture).
  Status prepare() {
    if (step_.kv_layer_ready == nullptr) return Status();
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaError_t e = cudaStreamIsCapturing(stream_, &capture); e != cudaSuccess) {
      return cuda_status(e, "KV offload wait");
    }
    if (capture == cudaStreamCaptureStatusActive) kv_wait_flags_ = cudaEventWaitExternal;
    return Status();
  }

  Status embed() override {
    embedding(as<T>(m_.embedding_), m_.embedding_rows_, d_, step_.token_ids, n_, hidden(), stream_);
    mark(OpTimer::kEmbed);
    return Status();
  }

  Status attention_block(int64_t l) override {
    const CudaLayer& w = m_.layers_[static_cast<size_t>(l)];
    T* k_cache = as<T>(kv_.k(l));
    T* v_cache = as<T>(kv_.v(l));
    T* qkv = as<T>(act_.qkv.get());
    T* attn = as<T>(act_.attn.get());
    if (small_) {
      TESSERA_GEMM_TRY(w.qkv.gemv(GemvInput<T>{hidden(), nullptr, as<T>(w.attn_norm), eps_}, n_, qkv, stream_, pdl_));
    } else {
      // branch = norm(hidden); from the second layer on, hidden += the last MLP output first.
      if (l == 0) {
        rms_norm(hidden(), as<T>(w.attn_norm), eps_, n_, d_, branch(), stream_);
      } else {
        fused_add_rms_norm(branch(), hidden(), as<T>(w.attn_norm), eps_, n_, d_, stream_);
      }
      mark(OpTimer::kNorm);
      TESSERA_GEMM_TRY(w.qkv.matmul(m_.gemm_, branch(), n_, qkv, stream_));
    }
    mark(OpTimer::kQkvGemm);
    if (step_.kv_layer_ready != nullptr) {
      if (cudaError_t e = cudaStreamWaitEvent(stream_, step_.kv_layer_ready[l], kv_wait_flags_); e != cudaSuccess) {
        return cuda_status(e, "KV offload wait");
      }
    }
    if (step_.one_token_per_seq) {  // one kernel: no token reads another's new K/V
      const QkvRope<T> rope{as<T>(w.qkv_bias), as<T>(w.q_norm), as<T>(w.k_norm), eps_, m_.inv_freq_.get(),
                            c_.rope_layout};
      rope_paged_attention(qkv, rope, step_.meta, shape_, step_.num_splits, act_.attention_workspace.get(),
                           as<T>(act_.q.get()), k_cache, v_cache, attn, stream_);
    } else {
      qkv_rope_cache(qkv, as<T>(w.qkv_bias), as<T>(w.q_norm), as<T>(w.k_norm), eps_, step_.meta.positions,
                     step_.meta.slot_mapping, n_, nh_, nkv_, hd_, m_.inv_freq_.get(), c_.rope_layout,
                     as<T>(act_.q.get()), k_cache, v_cache, stream_);
      mark(OpTimer::kRopeCache);
      paged_attention(as<T>(act_.q.get()), k_cache, v_cache, step_.meta, shape_, step_.num_splits,
                      act_.attention_workspace.get(), attn, stream_);
    }
    mark(OpTimer::kAttention);
    if (small_) {
      TESSERA_GEMM_TRY(w.o.gemv_add(GemvInput<T>{attn}, n_, hidden(), stream_, pdl_));
    } else {
      TESSERA_GEMM_TRY(w.o.matmul(m_.gemm_, attn, n_, branch(), stream_));
    }
    mark(OpTimer::kOGemm);
    return Status();
  }

  Status gated_mlp_block(int64_t l) override {
    const CudaLayer& w = m_.layers_[static_cast<size_t>(l)];
    T* act = as<T>(act_.act.get());
    if (bulk_) {
      TESSERA_GEMM_TRY(
          w.gate_up.gemv_silu_mul(GemvInput<T>{hidden(), nullptr, as<T>(w.ffn_norm), eps_}, n_, act, stream_, pdl_));
      mark(OpTimer::kGateUpGemm);
      TESSERA_GEMM_TRY(w.down.gemv_add(GemvInput<T>{act}, n_, hidden(), stream_, pdl_));
      mark(OpTimer::kDownGemm);
      return Status();
    }
    if (small_) {
      rms_norm(hidden(), as<T>(w.ffn_norm), eps_, n_, d_, branch(), stream_);
    } else {
      fused_add_rms_norm(branch(), hidden(), as<T>(w.ffn_norm), eps_, n_, d_, stream_);
    }
    mark(OpTimer::kNorm);
    T* gate_up = as<T>(act_.gate_up.get());
    TESSERA_GEMM_TRY(w.gate_up.matmul(m_.gemm_, branch(), n_, gate_up, stream_));
    mark(OpTimer::kGateUpGemm);
    silu_and_mul_fused(gate_up, n_, inter_, act, stream_);
    mark(OpTimer::kSilu);
    // Decode adds the MLP output into the residual stream here; larger steps leave it in
    // branch for the next layer's (or the final) fused add + norm.
    if (small_) {
      TESSERA_GEMM_TRY(w.down.matmul_add(m_.gemm_, act, n_, hidden(), stream_));
    } else {
      TESSERA_GEMM_TRY(w.down.matmul(m_.gemm_, act, n_, branch(), stream_));
    }
    mark(OpTimer::kDownGemm);
    return Status();
  }

  // GEMV steps norm their rows in the LM head's prologue (lm_head); larger steps do the last
  // residual add and the final norm over every token (cheap next to a layer), then gather
  // the rows that need logits.
  Status final_norm() override {
    if (!small_) {
      fused_add_rms_norm(branch(), hidden(), as<T>(m_.final_norm_), eps_, n_, d_, stream_);
      gather_rows(branch(), step_.logits_indices, num_rows_, d_, as<T>(act_.selected.get()), stream_);
      mark(OpTimer::kLogitsRows);
    }
    return cuda_status(cudaGetLastError(), "forward");
  }

 private:
  void mark(OpTimer::Op op) {
    if (m_.timer_ != nullptr) m_.timer_->mark(op, stream_);
  }
  T* hidden() { return as<T>(act_.hidden.get()); }
  T* branch() { return as<T>(act_.branch.get()); }

  CudaModel& m_;
  const ModelConfig& c_;
  const CudaStep& step_;
  const int64_t num_rows_;
  const CudaKvCache& kv_;
  CudaActivations& act_;
  cudaStream_t stream_;
  const int64_t n_, d_, hd_, nh_, nkv_, inter_;
  const float eps_;
  const AttentionShape shape_;
  const bool small_, bulk_;
  const GemvOptions pdl_;
  unsigned kv_wait_flags_ = cudaEventWaitDefault;
};

Status CudaModel::forward_hidden(const CudaStep& step, int64_t num_rows, const CudaKvCache& kv, CudaActivations& act,
                                 cudaStream_t stream) {
  auto run = [&](auto& pass) -> Status {
    TESSERA_RETURN_IF_ERROR(pass.prepare());
    return definition_(config_, pass);
  };
  if (dtype_ == DType::kF16) {
    Pass<f16> pass(*this, step, num_rows, kv, act, stream);
    return run(pass);
  }
  Pass<bf16> pass(*this, step, num_rows, kv, act, stream);
  return run(pass);
}

Status CudaModel::lm_head(const CudaStep& step, const CudaActivations& act, int64_t first_row, int64_t num_rows,
                          float* logits, cudaStream_t stream) {
  if (dtype_ == DType::kF16) return lm_head_as<f16>(step, act, first_row, num_rows, logits, stream);
  return lm_head_as<bf16>(step, act, first_row, num_rows, logits, stream);
}

template <typename T>
Status CudaModel::lm_head_as(const CudaStep& step, const CudaActivations& act, int64_t first_row, int64_t num_rows,
                             float* logits, cudaStream_t stream) {
  const int64_t d = config_.hidden_size;
  const bool bulk = step.meta.num_tokens <= bulk_decode_tokens_;
  T* hidden = as<T>(act.hidden.get());
  const T* norm = as<T>(final_norm_);
  if (uses_gemv(step.meta.num_tokens) && bulk) {
    // The residual stream's rows, gathered and normed in the GEMV's prologue.
    TESSERA_GEMM_TRY(lm_head_.gemv_f32(
        GemvInput<T>{hidden, step.logits_indices + first_row, norm, static_cast<float>(config_.rms_norm_eps)},
        num_rows, logits, stream, GemvOptions{.pdl = true, .variant = kGemvBulkVariant}));
  } else {
    T* rows = as<T>(act.selected.get()) + first_row * d;
    if (uses_gemv(step.meta.num_tokens)) {  // the rows are not gathered and normed yet
      gather_rows(hidden, step.logits_indices + first_row, num_rows, d, rows, stream);
      rms_norm(rows, norm, static_cast<float>(config_.rms_norm_eps), num_rows, d, rows, stream);
    }
    TESSERA_GEMM_TRY(lm_head_.matmul_f32(gemm_, rows, num_rows, logits, stream));
  }
  if (timer_ != nullptr) timer_->mark(OpTimer::kLmHead, stream);
  return Status();
}

}  // namespace tessera::cuda
