#include "gemv_sweep.h"

#include "backend/cuda/gemv_kernels.cuh"

namespace tessera::cuda::sweep {
namespace {

// cp.async: 8 or 4 warps x 4, 6 or 8 stages; bulk: rings of 8, 4 (the engine's), 3, 5 stages.
constexpr GemvVariant kVariants[] = {{8, 4, false, 16}, {4, 4, false, 16}, {8, 6, false, 16}, {4, 8, false, 16},
                                     {8, 8, true, 16},  {8, 4, true, 16},  {8, 3, true, 16},  {8, 5, true, 16}};

}  // namespace

int variant_count() { return static_cast<int>(std::size(kVariants)); }

GemvVariant variant(int i) { return kVariants[i]; }

std::string gemv(const GemvInput<bf16>& in, const bf16* w, int64_t n, int64_t k, int64_t m, bf16* out,
                 cudaStream_t stream, const GemvOptions& opt) {
  return run<kVariants, Epi::kElem>("gemv", in, w, n, k, m, out, stream, opt);
}

std::string gemv_f32(const GemvInput<bf16>& in, const bf16* w, int64_t n, int64_t k, int64_t m, float* out,
                     cudaStream_t stream, const GemvOptions& opt) {
  return run<kVariants, Epi::kF32>("gemv_f32", in, w, n, k, m, out, stream, opt);
}

std::string gemv_add(const GemvInput<bf16>& in, const bf16* w, int64_t n, int64_t k, int64_t m, bf16* residual,
                     cudaStream_t stream, const GemvOptions& opt) {
  return run<kVariants, Epi::kAdd>("gemv_add", in, w, n, k, m, residual, stream, opt);
}

std::string gemv_silu_mul(const GemvInput<bf16>& in, const bf16* w_gate_up, int64_t n, int64_t k, int64_t inter,
                          bf16* out, cudaStream_t stream, const GemvOptions& opt) {
  return run<kVariants, Epi::kSiluMul>("gemv_silu_mul", in, w_gate_up, n, k, inter, out, stream, opt);
}

}  // namespace tessera::cuda::sweep
