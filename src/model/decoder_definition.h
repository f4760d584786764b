// The decoder's structure, written once for every backend: a definition is the sequence of
// block-level ops one forward pass runs, over a DecoderBackend that each backend implements
// with its own kernels and fusions (the CPU's fp32 ops; CUDA's GEMV chains with the norm in
// the prologue and the residual add in the epilogue, or cuBLASLt GEMMs with fused
// add + norm). A backend keeps what passes between ops (the residual stream, a pending add)
// to itself, so the definition never names a buffer. An architecture whose layers differ
// (post-norms, another activation) adds the ops it needs here and its own definition.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "config/model_config.h"

namespace tessera {

class DecoderBackend {
 public:
  virtual ~DecoderBackend() = default;
  // Token embeddings into the residual stream h.
  virtual Status embed() = 0;
  // h += o_proj(attention(rope(qkv(rms_norm(h))))) with this step's K/V written to the cache;
  // q/k/v biases and per-head q/k norms as the layer's weights have them.
  virtual Status attention_block(int64_t layer) = 0;
  // h += down_proj(silu(gate_proj(x)) * up_proj(x)), x = rms_norm(h).
  virtual Status gated_mlp_block(int64_t layer) = 0;
  // The final norm of the rows that need logits, ready for the LM head.
  virtual Status final_norm() = 0;
};

// One forward pass of an architecture over a backend.
using DecoderDefinition = Status (*)(const ModelConfig& config, DecoderBackend& backend);

// The pre-norm decoder of Llama, Mistral, Qwen2/3 and Phi-3: embedding, then per layer
// attention and a gated MLP, each around the residual stream, then the final norm.
Status pre_norm_decoder(const ModelConfig& config, DecoderBackend& backend);

}  // namespace tessera
