// RMSNorm and fused residual-add + RMSNorm: one block per row; the sum of squares is
// reduced in fp32 across the block, then each thread scales its elements.
#include "backend/cuda/ops.h"

namespace tessera::cuda {
namespace {

constexpr int kThreads = 256;

// Sum of v over the block (every thread gets the total).
__device__ float block_sum(float v) {
  __shared__ float warp_sums[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
  __syncthreads();  // warp_sums may be reused by the caller's next reduction
  return total;
}

__global__ void rms_norm_kernel(const bf16* __restrict__ x, const bf16* __restrict__ weight, float eps,
                                int64_t dim, bf16* out) {
  const bf16* row = x + blockIdx.x * dim;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    const float v = __bfloat162float(row[i]);
    ss += v * v;
  }
  const float inv_rms = rsqrtf(block_sum(ss) / static_cast<float>(dim) + eps);
  bf16* o = out + blockIdx.x * dim;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    o[i] = __float2bfloat16(__bfloat162float(row[i]) * inv_rms * __bfloat162float(weight[i]));
  }
}

__global__ void fused_add_rms_norm_kernel(bf16* x, bf16* residual, const bf16* __restrict__ weight, float eps,
                                          int64_t dim) {
  bf16* xr = x + blockIdx.x * dim;
  bf16* rr = residual + blockIdx.x * dim;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    const bf16 sum = __float2bfloat16(__bfloat162float(xr[i]) + __bfloat162float(rr[i]));
    rr[i] = sum;  // the residual stream stays bf16, as unfused
    const float v = __bfloat162float(sum);
    ss += v * v;
  }
  const float inv_rms = rsqrtf(block_sum(ss) / static_cast<float>(dim) + eps);
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    xr[i] = __float2bfloat16(__bfloat162float(rr[i]) * inv_rms * __bfloat162float(weight[i]));
  }
}

}  // namespace

void rms_norm(const bf16* x, const bf16* weight, float eps, int64_t n, int64_t dim, bf16* out, cudaStream_t stream) {
  if (n == 0) return;
  rms_norm_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(x, weight, eps, dim, out);
}

void fused_add_rms_norm(bf16* x, bf16* residual, const bf16* weight, float eps, int64_t n, int64_t dim,
                        cudaStream_t stream) {
  if (n == 0) return;
  fused_add_rms_norm_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(x, residual, weight, eps, dim);
}

}  // namespace tessera::cuda
