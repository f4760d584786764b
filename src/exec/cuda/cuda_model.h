// CudaModel: a DecoderModel's weights on the device in the compute dtype (bf16 or f16), its
// linear layers as DeviceLinears (q/k/v and gate/up fused into one matrix each), and its
// forward pass: the model's DecoderDefinition run over the CUDA ops (CudaModel::Pass<T>, T the
// compute dtype's element type) on one stream, with no host synchronization inside, so a
// decode step can be captured into a CUDA graph.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "backend/cuda/gemv.h"
#include "backend/cuda/matmul.h"
#include "backend/cuda/ops.h"
#include "exec/cuda/device_buffer.h"
#include "exec/cuda/device_linear.h"
#include "exec/cuda/elem16.h"
#include "exec/cuda/op_timer.h"
#include "model/layers/decoder_model.h"
#include "tessera/tuning.h"

namespace tessera::cuda {

// Element pointers below are of the compute dtype (Elem16: elem16.h).
struct CudaLayer {
  Elem16* attn_norm = nullptr;  // [hidden]
  Elem16* ffn_norm = nullptr;   // [hidden]
  DeviceLinear qkv;             // [(num_heads + 2 * num_kv_heads) * head_dim, hidden]: q, k, v rows
  Elem16* qkv_bias = nullptr;   // [(num_heads + 2 * num_kv_heads) * head_dim] or null
  Elem16* q_norm = nullptr;     // [head_dim] or null (Qwen3)
  Elem16* k_norm = nullptr;     // [head_dim] or null
  DeviceLinear o;             // [hidden, num_heads * head_dim]
  DeviceLinear gate_up;       // [2 * intermediate, hidden]: gate rows, then up rows
  DeviceLinear down;          // [hidden, intermediate]
};

// Device buffers of one step, allocated once for at most max_tokens tokens and max_rows
// logits rows; their addresses never change (CUDA graphs replay them).
struct CudaActivations {
  DeviceBuffer<Elem16> hidden;    // [max_tokens, hidden] residual stream
  DeviceBuffer<Elem16> branch;    // [max_tokens, hidden] normed input / block output
  DeviceBuffer<Elem16> qkv;       // [max_tokens, (num_heads + 2 * num_kv_heads) * head_dim]
  DeviceBuffer<Elem16> q;         // [max_tokens, num_heads * head_dim]
  DeviceBuffer<Elem16> attn;      // [max_tokens, num_heads * head_dim]
  DeviceBuffer<Elem16> gate_up;   // [max_tokens, 2 * intermediate]
  DeviceBuffer<Elem16> act;       // [max_tokens, intermediate]
  DeviceBuffer<Elem16> selected;  // [max_rows, hidden] rows that need logits
  DeviceBuffer<char> attention_workspace;
  int64_t max_tokens = 0;
  int64_t max_rows = 0;
  Status allocate(const ModelConfig& c, int64_t max_tokens, int64_t max_rows, size_t attention_workspace_bytes);
};

// The KV cache on the device: per layer K and V [num_blocks, block_size, num_kv_heads, head_dim]
// in the compute dtype.
struct CudaKvCache {
  DeviceBuffer<Elem16> storage;
  int64_t block_size = 16;
  int64_t layer_elems = 0;  // elements of one layer's K (or V)
  Elem16* k(int64_t layer) const { return storage.get() + (2 * layer) * layer_elems; }
  Elem16* v(int64_t layer) const { return storage.get() + (2 * layer + 1) * layer_elems; }
};

// One step's inputs in device memory.
struct CudaStep {
  const int32_t* token_ids = nullptr;       // [num_tokens]
  AttentionMetadata meta;                   // positions, sequences, slots, block tables
  int num_splits = 1;                       // attention splits per token (fixed per CUDA graph)
  // Each token the only one of its sequence (decode steps, every CUDA graph; the padding
  // tokens share one, but also their position and inputs, so they write the same K/V into
  // the same slot): RoPE and the K/V write move into the attention kernel.
  bool one_token_per_seq = false;
  const int32_t* logits_indices = nullptr;  // [num_rows] batch tokens whose logits are wanted
  // KV offload (kv_offload_copier.h): per layer, the event to wait for before writing its
  // K/V (that layer's stores to host memory are done); null: none.
  const cudaEvent_t* kv_layer_ready = nullptr;
};

class CudaModel {
 public:
  // Copies the weights of `model` to the current device as dtype (kBF16 or kF16: the compute
  // dtype of every step). With offload_bytes, the linear
  // layers of the last layers, whole layers until at least that many bytes, go to pinned host
  // memory instead, which the kernels read over PCIe through unified addressing (vLLM's
  // cpu_offload_gb): a model larger than the device's memory runs, slower.
  static Result<std::unique_ptr<CudaModel>> upload(const DecoderModel& model, DType dtype, cudaStream_t stream,
                                                   int64_t offload_bytes = 0);

  const ModelConfig& config() const { return config_; }
  DType dtype() const { return dtype_; }
  // Bytes of weights in device memory, and in host memory (offloaded).
  size_t weight_bytes() const { return weights_.size() * sizeof(Elem16) + inv_freq_.size() * sizeof(float); }
  size_t offloaded_bytes() const { return host_weights_.size() * sizeof(Elem16); }

  // Runs the layers over step.meta.num_tokens tokens: the residual stream ends in
  // act.hidden; with more tokens than uses_gemv takes, the final-normed rows
  // step.logits_indices[0, num_rows) also land in act.selected.
  Status forward_hidden(const CudaStep& step, int64_t num_rows, const CudaKvCache& kv, CudaActivations& act,
                        cudaStream_t stream);
  // logits [num_rows, vocab] (fp32) of the rows step.logits_indices[first_row, first_row + num_rows).
  Status lm_head(const CudaStep& step, const CudaActivations& act, int64_t first_row, int64_t num_rows, float* logits,
                 cudaStream_t stream);
  // Whether a step of num_tokens runs the fused decode GEMVs (else cuBLASLt GEMMs).
  bool uses_gemv(int64_t num_tokens) const;
  // cuBLASLt algorithm tuning for shapes of up to max_rows rows (Gemm::set_tuning).
  void set_gemm_tuning(int64_t max_rows) { gemm_.set_tuning(max_rows); }
  // Marks each op's end on this timer (eager steps only; null: none).
  void set_timer(OpTimer* timer) { timer_ = timer; }
  // The bulk-decode bound (tessera/tuning.h).
  void set_tuning(const Tuning& tuning);

 private:
  template <typename T>
  class Pass;  // the DecoderBackend of one forward pass
  template <typename T>
  Status lm_head_as(const CudaStep& step, const CudaActivations& act, int64_t first_row, int64_t num_rows,
                    float* logits, cudaStream_t stream);
  ModelConfig config_;
  DType dtype_ = DType::kBF16;  // of the weights, activations and KV cache
  DecoderDefinition definition_ = nullptr;  // the architecture's, from the DecoderModel
  DeviceBuffer<Elem16> weights_;       // one arena; the pointers below point into it
  PinnedBuffer<Elem16> host_weights_;  // the offloaded layers' linears (empty: none)
  DeviceBuffer<float> inv_freq_;  // [head_dim / 2]
  Elem16* embedding_ = nullptr;   // [embedding rows, hidden]
  int64_t embedding_rows_ = 0;
  DeviceLinear lm_head_;          // [vocab, hidden]
  Elem16* final_norm_ = nullptr;  // [hidden]
  std::vector<CudaLayer> layers_;
  Gemm gemm_;
  OpTimer* timer_ = nullptr;
  // Decode steps of at most this many tokens run the MLP and the LM head as bulk GEMVs,
  // which stream those matrices fastest there (docs/benchmarks.md).
  int64_t bulk_decode_tokens_ = 8;
  static int decode_gemv_variant(bool bulk);
};

}  // namespace tessera::cuda
