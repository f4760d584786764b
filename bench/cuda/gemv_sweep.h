// The decode GEMVs of gemv.h over a sweep of candidate kernel shapes (warps, stages, bulk
// ring depth) that bench_gemv measures: the same kernels as the engine's, more shapes of
// them. GemvOptions::variant indexes sweep_variant().
#pragma once

#include "backend/cuda/gemv.h"

namespace tessera::cuda::sweep {

int variant_count();
GemvVariant variant(int i);

// bf16 only (the sweep compares shapes; gemv.h's launchers run f16 through the same
// kernel templates).
std::string gemv(const GemvInput<bf16>& in, const bf16* w, int64_t n, int64_t k, int64_t m, bf16* out,
                 cudaStream_t stream, const GemvOptions& opt);
std::string gemv_f32(const GemvInput<bf16>& in, const bf16* w, int64_t n, int64_t k, int64_t m, float* out,
                     cudaStream_t stream, const GemvOptions& opt);
std::string gemv_add(const GemvInput<bf16>& in, const bf16* w, int64_t n, int64_t k, int64_t m, bf16* residual,
                     cudaStream_t stream, const GemvOptions& opt);
std::string gemv_silu_mul(const GemvInput<bf16>& in, const bf16* w_gate_up, int64_t n, int64_t k, int64_t inter,
                          bf16* out, cudaStream_t stream, const GemvOptions& opt);

}  // namespace tessera::cuda::sweep
