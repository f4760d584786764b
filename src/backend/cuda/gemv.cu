// The engine's fused decode GEMVs (see gemv.h): the two kernel shapes it runs. Other
// shapes are candidates measured by bench/cuda/bench_gemv (bench/cuda/gemv_sweep.cu).
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

std::string gemv(const GemvInput& in, const bf16* w, int64_t n, int64_t k, int64_t m, bf16* out, cudaStream_t stream,
                 const GemvOptions& opt) {
  return run<kVariants, Epi::kBf16>("gemv", in, w, n, k, m, out, stream, opt);
}

std::string gemv_f32(const GemvInput& in, const bf16* w, int64_t n, int64_t k, int64_t m, float* out,
                     cudaStream_t stream, const GemvOptions& opt) {
  return run<kVariants, Epi::kF32>("gemv_f32", in, w, n, k, m, out, stream, opt);
}

std::string gemv_add(const GemvInput& in, const bf16* w, int64_t n, int64_t k, int64_t m, bf16* residual,
                     cudaStream_t stream, const GemvOptions& opt) {
  return run<kVariants, Epi::kAdd>("gemv_add", in, w, n, k, m, residual, stream, opt);
}

std::string gemv_silu_mul(const GemvInput& in, const bf16* w_gate_up, int64_t n, int64_t k, int64_t inter, bf16* out,
                          cudaStream_t stream, const GemvOptions& opt) {
  return run<kVariants, Epi::kSiluMul>("gemv_silu_mul", in, w_gate_up, n, k, inter, out, stream, opt);
}

}  // namespace tessera::cuda
