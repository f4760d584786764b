// The decoder-only transformer every supported architecture composes: its weights (validated
// at load) and, on the CPU, its forward pass, which runs the architecture's
// DecoderDefinition (decoder_definition.h) over the CPU ops, then the LM head (tied to the
// embedding or not) on the rows that need logits. Other backends copy the weights and run
// the same definition over their own ops.
#pragma once

#include <memory>
#include <vector>

#include "loader/weight_store.h"
#include "model/layers/attention_block.h"
#include "model/decoder_definition.h"
#include "model/layers/mlp.h"
#include "model/model.h"

namespace tessera {

class DecoderModel : public Model {
 public:
  static Result<std::unique_ptr<Model>> create(ModelConfig config,
                                               std::shared_ptr<const WeightStore> store,
                                               WeightScheme scheme);

  const ModelConfig& config() const override { return config_; }
  void forward(const ForwardBatch& batch, KvCache& cache, float* logits) override;
  // float32 weights: float32; float16 / bfloat16: the same; quantized: float16.
  KvDtype auto_kv_dtype() const override;
  DType weight_dtype() const override;

 struct Layer {
    std::vector<float> attn_norm;  // [hidden]
    std::vector<float> ffn_norm;   // [hidden]
    AttentionBlock attention;
    GatedMlp mlp;
  };

  // The validated weights, for backends that copy them (CUDA).
  const TensorView& embedding() const { return embedding_; }
  const Linear& lm_head() const { return lm_head_; }
  const std::vector<float>& final_norm() const { return final_norm_; }
  const std::vector<float>& inv_freq() const { return inv_freq_; }
  const std::vector<Layer>& layers() const { return layers_; }
  DecoderDefinition definition() const { return definition_; }

 private:

  ModelConfig config_;
  std::shared_ptr<const WeightStore> store_;  // owns the mmapped weights the views point into
  TensorView embedding_;                      // [vocab, hidden]
  Linear lm_head_;                            // [vocab, hidden]
  std::vector<float> final_norm_;             // [hidden]
  std::vector<float> inv_freq_;               // [head_dim / 2]
  std::vector<Layer> layers_;
  DecoderDefinition definition_ = &pre_norm_decoder;
  class CpuPass;  // the CPU's DecoderBackend over one batch

  // Scratch reused across steps.
  std::vector<float> hidden_;    // [num_tokens, hidden] residual stream
  std::vector<float> normed_;    // [num_tokens, hidden]
  std::vector<float> branch_;    // [num_tokens, hidden]
  std::vector<float> selected_;  // [num_logits, hidden]
  std::vector<float> padded_logits_;  // [num_logits, embedding rows] when rows > vocab_size
  AttentionScratch attn_scratch_;
  MlpScratch mlp_scratch_;
};

}  // namespace tessera
