// SiLU-and-mul: out = silu(gate) * up, elementwise, fp32 arithmetic.
#include <algorithm>

#include "backend/cuda/ops.h"

namespace tessera::cuda {
namespace {

__global__ void silu_and_mul_kernel(const bf16* __restrict__ gate, const bf16* __restrict__ up, int64_t count,
                                    bf16* __restrict__ out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = __bfloat162float(gate[i]);
    out[i] = __float2bfloat16(g / (1.0f + expf(-g)) * __bfloat162float(up[i]));
  }
}

}  // namespace

void silu_and_mul(const bf16* gate, const bf16* up, int64_t n, int64_t inter, bf16* out, cudaStream_t stream) {
  const int64_t count = n * inter;
  if (count == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((count + kThreads - 1) / kThreads, 65535);
  silu_and_mul_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(gate, up, count, out);
}

}  // namespace tessera::cuda
