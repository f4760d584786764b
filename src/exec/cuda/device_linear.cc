#include "exec/cuda/device_linear.h"

#include <type_traits>

namespace tessera::cuda {

DeviceLinear::DeviceLinear(LinearKind kind, const void* w, int64_t out_features, int64_t in_features)
    : kind_(kind), weight_(w), out_(out_features), in_(in_features) {}

DeviceLinear DeviceLinear::dense(const bf16* w, int64_t out_features, int64_t in_features) {
  return DeviceLinear(LinearKind::kBf16, w, out_features, in_features);
}

DeviceLinear DeviceLinear::dense(const f16* w, int64_t out_features, int64_t in_features) {
  return DeviceLinear(LinearKind::kF16, w, out_features, in_features);
}

template <typename T>
const T* DeviceLinear::dense_weight() const {
  const LinearKind want = std::is_same_v<T, f16> ? LinearKind::kF16 : LinearKind::kBf16;
  return kind_ == want ? static_cast<const T*>(weight_) : nullptr;
}

// Every kind dispatches here; a kind without an operation for these activations answers with
// its name, so a missing kernel is an error at the first step, never a wrong product.
namespace {
const char* kind_name(LinearKind k) { return k == LinearKind::kF16 ? "float16" : "bfloat16"; }
template <typename T>
std::string no_kernel(LinearKind k) {
  return std::string("linear layer: no kernel for a ") + kind_name(k) + " weight with " +
         (std::is_same_v<T, f16> ? "float16" : "bfloat16") + " activations";
}
}  // namespace

template <typename T>
std::string DeviceLinear::matmul(Gemm& gemm, const T* x, int64_t n, T* y, cudaStream_t stream) const {
  if (const T* w = dense_weight<T>()) return gemm.matmul(x, w, n, in_, out_, y, stream);
  return no_kernel<T>(kind_);
}

template <typename T>
std::string DeviceLinear::matmul_f32(Gemm& gemm, const T* x, int64_t n, float* y, cudaStream_t stream) const {
  if (const T* w = dense_weight<T>()) return gemm.matmul_f32(x, w, n, in_, out_, y, stream);
  return no_kernel<T>(kind_);
}

template <typename T>
std::string DeviceLinear::matmul_add(Gemm& gemm, const T* x, int64_t n, T* residual, cudaStream_t stream) const {
  if (const T* w = dense_weight<T>()) return gemm.matmul_add(x, w, n, in_, out_, residual, stream);
  return no_kernel<T>(kind_);
}

bool DeviceLinear::gemv_supported(int64_t n) const {
  switch (kind_) {
    case LinearKind::kBf16:
    case LinearKind::kF16:
      return n <= kGemvMaxTokens && cuda::gemv_supported(n, in_);
  }
  return false;
}

template <typename T>
std::string DeviceLinear::gemv(const GemvInput<T>& x, int64_t n, T* y, cudaStream_t stream,
                               const GemvOptions& opt) const {
  if (const T* w = dense_weight<T>()) return cuda::gemv(x, w, n, in_, out_, y, stream, opt);
  return no_kernel<T>(kind_);
}

template <typename T>
std::string DeviceLinear::gemv_f32(const GemvInput<T>& x, int64_t n, float* y, cudaStream_t stream,
                                   const GemvOptions& opt) const {
  if (const T* w = dense_weight<T>()) return cuda::gemv_f32(x, w, n, in_, out_, y, stream, opt);
  return no_kernel<T>(kind_);
}

template <typename T>
std::string DeviceLinear::gemv_add(const GemvInput<T>& x, int64_t n, T* residual, cudaStream_t stream,
                                   const GemvOptions& opt) const {
  if (const T* w = dense_weight<T>()) return cuda::gemv_add(x, w, n, in_, out_, residual, stream, opt);
  return no_kernel<T>(kind_);
}

template <typename T>
std::string DeviceLinear::gemv_silu_mul(const GemvInput<T>& x, int64_t n, T* y, cudaStream_t stream,
                                        const GemvOptions& opt) const {
  if (const T* w = dense_weight<T>()) return cuda::gemv_silu_mul(x, w, n, in_, out_ / 2, y, stream, opt);
  return no_kernel<T>(kind_);
}

#define TESSERA_INSTANTIATE(T)                                                                                   \
  template std::string DeviceLinear::matmul<T>(Gemm&, const T*, int64_t, T*, cudaStream_t) const;                \
  template std::string DeviceLinear::matmul_f32<T>(Gemm&, const T*, int64_t, float*, cudaStream_t) const;        \
  template std::string DeviceLinear::matmul_add<T>(Gemm&, const T*, int64_t, T*, cudaStream_t) const;            \
  template std::string DeviceLinear::gemv<T>(const GemvInput<T>&, int64_t, T*, cudaStream_t, const GemvOptions&) \
      const;                                                                                                     \
  template std::string DeviceLinear::gemv_f32<T>(const GemvInput<T>&, int64_t, float*, cudaStream_t,             \
                                                 const GemvOptions&) const;                                      \
  template std::string DeviceLinear::gemv_add<T>(const GemvInput<T>&, int64_t, T*, cudaStream_t,                 \
                                                 const GemvOptions&) const;                                      \
  template std::string DeviceLinear::gemv_silu_mul<T>(const GemvInput<T>&, int64_t, T*, cudaStream_t,            \
                                                      const GemvOptions&) const;
TESSERA_FOR_EACH_ELEM(TESSERA_INSTANTIATE)

}  // namespace tessera::cuda
