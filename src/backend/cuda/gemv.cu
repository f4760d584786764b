// The engine's fused decode GEMVs (see gemv.h): the two kernel shapes it runs, for bf16 and
// f16. Other shapes are candidates measured by bench/cuda/bench_gemv (bench/cuda/gemv_sweep.cu).
#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_kernels.cuh"

namespace tessera::cuda {
namespace {

// 0: cp.async, 8 warps x 4 stages; kGemvBulkVariant: the bulk kernel with a 4-stage ring.
constexpr GemvVariant kVariants[] = {{8, 4, false, 16}, {8, 4, true, 16}};
static_assert(kVariants[kGemvBulkVariant].bulk && kVariants[kGemvBulkVariant].stages == 4 &&
              kVariants[kGemvBulkVariant].tile_rows == 16);

}  // namespace

bool gemv_supported(int64_t n, int64_t k) { return n >= 1 && n <= kGemvMaxTokens && k > 0 && k % 8 == 0; }

int gemv_variant_count() { return static_cast<int>(std::size(kVariants)); }

GemvVariant gemv_variant(int i) { return kVariants[i]; }

template <typename T>
std::string gemv(const GemvInput<T>& in, const T* w, int64_t n, int64_t k, int64_t m, T* out, cudaStream_t stream,
                 const GemvOptions& opt) {
  return run<kVariants, Epi::kElem>("gemv", in, w, n, k, m, out, stream, opt);
}

template <typename T>
std::string gemv_f32(const GemvInput<T>& in, const T* w, int64_t n, int64_t k, int64_t m, float* out,
                     cudaStream_t stream, const GemvOptions& opt) {
  return run<kVariants, Epi::kF32>("gemv_f32", in, w, n, k, m, out, stream, opt);
}

template <typename T>
std::string gemv_add(const GemvInput<T>& in, const T* w, int64_t n, int64_t k, int64_t m, T* residual,
                     cudaStream_t stream, const GemvOptions& opt) {
  return run<kVariants, Epi::kAdd>("gemv_add", in, w, n, k, m, residual, stream, opt);
}

template <typename T>
std::string gemv_silu_mul(const GemvInput<T>& in, const T* w_gate_up, int64_t n, int64_t k, int64_t inter, T* out,
                          cudaStream_t stream, const GemvOptions& opt) {
  return run<kVariants, Epi::kSiluMul>("gemv_silu_mul", in, w_gate_up, n, k, inter, out, stream, opt);
}

#define TESSERA_GEMV_INSTANTIATE(T)                                                                                 \
  template std::string gemv<T>(const GemvInput<T>&, const T*, int64_t, int64_t, int64_t, T*, cudaStream_t,         \
                               const GemvOptions&);                                                                \
  template std::string gemv_f32<T>(const GemvInput<T>&, const T*, int64_t, int64_t, int64_t, float*, cudaStream_t, \
                                   const GemvOptions&);                                                            \
  template std::string gemv_add<T>(const GemvInput<T>&, const T*, int64_t, int64_t, int64_t, T*, cudaStream_t,     \
                                   const GemvOptions&);                                                            \
  template std::string gemv_silu_mul<T>(const GemvInput<T>&, const T*, int64_t, int64_t, int64_t, T*, cudaStream_t, \
                                        const GemvOptions&);
TESSERA_FOR_EACH_ELEM(TESSERA_GEMV_INSTANTIATE)
#undef TESSERA_GEMV_INSTANTIATE

}  // namespace tessera::cuda
