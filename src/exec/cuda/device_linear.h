// DeviceLinear: a linear layer's weight on the device and the products the CUDA pass
// computes with it. CudaModel::Pass names only these operations, never a weight format: a
// new kind of weight (FP8 with its scales, packed 4-bit, a LoRA delta) is a LinearKind, its
// upload, and its cases here, with the decoder untouched.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "backend/cuda/gemv.h"
#include "backend/cuda/matmul.h"
#include "backend/cuda/ops.h"

namespace tessera::cuda {

enum class LinearKind : uint8_t {
  kBf16,  // dense bf16 [out_features, in_features], row-major (checkpoints of any dtype, converted at upload)
  kF16,   // the same in fp16 (dtype half)
};

class DeviceLinear {
 public:
  DeviceLinear() = default;
  // w: [out_features, in_features] bf16 or f16 in device memory (not owned).
  static DeviceLinear dense(const bf16* w, int64_t out_features, int64_t in_features);
  static DeviceLinear dense(const f16* w, int64_t out_features, int64_t in_features);

  LinearKind kind() const { return kind_; }
  int64_t out_features() const { return out_; }
  int64_t in_features() const { return in_; }

  // Each returns empty when queued on the stream, else what was refused (a weight of
  // another element type than the activations' T included). T: bf16 or f16.
  // Products over many rows (prefill, mixed and larger decode steps): cuBLASLt GEMMs.
  // y [n, out] = x [n, in] . W^T
  template <typename T>
  std::string matmul(Gemm& gemm, const T* x, int64_t n, T* y, cudaStream_t stream) const;
  // y [n, out] fp32 (logits).
  template <typename T>
  std::string matmul_f32(Gemm& gemm, const T* x, int64_t n, float* y, cudaStream_t stream) const;
  // residual [n, out] += x . W^T, one rounding.
  template <typename T>
  std::string matmul_add(Gemm& gemm, const T* x, int64_t n, T* residual, cudaStream_t stream) const;

  // Decode products (n <= kGemvMaxTokens) that stream the weight, with the input's gather
  // and RMSNorm in the prologue (GemvInput).
  // Whether this weight's GEMV kernels take n tokens.
  bool gemv_supported(int64_t n) const;
  template <typename T>
  std::string gemv(const GemvInput<T>& x, int64_t n, T* y, cudaStream_t stream, const GemvOptions& opt) const;
  template <typename T>
  std::string gemv_f32(const GemvInput<T>& x, int64_t n, float* y, cudaStream_t stream,
                       const GemvOptions& opt) const;
  template <typename T>
  std::string gemv_add(const GemvInput<T>& x, int64_t n, T* residual, cudaStream_t stream,
                       const GemvOptions& opt) const;
  // A fused gate/up weight [2 * inter, in] (gate rows, then up rows): y [n, inter] =
  // silu(x . gate^T) * (x . up^T).
  template <typename T>
  std::string gemv_silu_mul(const GemvInput<T>& x, int64_t n, T* y, cudaStream_t stream,
                            const GemvOptions& opt) const;

 private:
  DeviceLinear(LinearKind kind, const void* w, int64_t out_features, int64_t in_features);
  // The weight as T, or null when this kind is not a dense T weight.
  template <typename T>
  const T* dense_weight() const;

  LinearKind kind_ = LinearKind::kBf16;
  const void* weight_ = nullptr;
  int64_t out_ = 0, in_ = 0;
};

}  // namespace tessera::cuda
