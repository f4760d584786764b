#include "exec/cuda/device_linear.h"

namespace tessera::cuda {

DeviceLinear DeviceLinear::dense_bf16(const bf16* w, int64_t out_features, int64_t in_features) {
  DeviceLinear l;
  l.kind_ = LinearKind::kBf16;
  l.weight_ = w;
  l.out_ = out_features;
  l.in_ = in_features;
  return l;
}

// Every kind dispatches here; a kind without an operation answers with its name, so a
// missing kernel is an error at the first step, never a wrong product.
std::string DeviceLinear::matmul(Gemm& gemm, const bf16* x, int64_t n, bf16* y, cudaStream_t stream) const {
  switch (kind_) {
    case LinearKind::kBf16:
      return gemm.matmul(x, weight_, n, in_, out_, y, stream);
  }
  return "linear layer: unknown weight kind";
}

std::string DeviceLinear::matmul_f32(Gemm& gemm, const bf16* x, int64_t n, float* y, cudaStream_t stream) const {
  switch (kind_) {
    case LinearKind::kBf16:
      return gemm.matmul_f32(x, weight_, n, in_, out_, y, stream);
  }
  return "linear layer: unknown weight kind";
}

std::string DeviceLinear::matmul_add(Gemm& gemm, const bf16* x, int64_t n, bf16* residual,
                                     cudaStream_t stream) const {
  switch (kind_) {
    case LinearKind::kBf16:
      return gemm.matmul_add(x, weight_, n, in_, out_, residual, stream);
  }
  return "linear layer: unknown weight kind";
}

bool DeviceLinear::gemv_supported(int64_t n) const {
  switch (kind_) {
    case LinearKind::kBf16:
      return n <= kGemvMaxTokens && cuda::gemv_supported(n, in_);
  }
  return false;
}

std::string DeviceLinear::gemv(const GemvInput& x, int64_t n, bf16* y, cudaStream_t stream,
                               const GemvOptions& opt) const {
  switch (kind_) {
    case LinearKind::kBf16:
      return cuda::gemv(x, weight_, n, in_, out_, y, stream, opt);
  }
  return "linear layer: unknown weight kind";
}

std::string DeviceLinear::gemv_f32(const GemvInput& x, int64_t n, float* y, cudaStream_t stream,
                                   const GemvOptions& opt) const {
  switch (kind_) {
    case LinearKind::kBf16:
      return cuda::gemv_f32(x, weight_, n, in_, out_, y, stream, opt);
  }
  return "linear layer: unknown weight kind";
}

std::string DeviceLinear::gemv_add(const GemvInput& x, int64_t n, bf16* residual, cudaStream_t stream,
                                   const GemvOptions& opt) const {
  switch (kind_) {
    case LinearKind::kBf16:
      return cuda::gemv_add(x, weight_, n, in_, out_, residual, stream, opt);
  }
  return "linear layer: unknown weight kind";
}

std::string DeviceLinear::gemv_silu_mul(const GemvInput& x, int64_t n, bf16* y, cudaStream_t stream,
                                        const GemvOptions& opt) const {
  switch (kind_) {
    case LinearKind::kBf16:
      return cuda::gemv_silu_mul(x, weight_, n, in_, out_ / 2, y, stream, opt);
  }
  return "linear layer: unknown weight kind";
}

}  // namespace tessera::cuda
