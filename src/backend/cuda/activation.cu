// SiLU-and-mul: out = silu(gate) * up, elementwise, fp32 arithmetic.
#include <algorithm>

#include "backend/cuda/elem.cuh"
#include "backend/cuda/ops.h"

namespace tessera::cuda {
namespace {

template <typename T>
__global__ void silu_and_mul_kernel(const T* __restrict__ gate, const T* __restrict__ up, int64_t count,
                                    T* __restrict__ out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = to_f32(gate[i]);
    out[i] = from_f32<T>(g / (1.0f + expf(-g)) * to_f32(up[i]));
  }
}

}  // namespace

template <typename T>
void silu_and_mul(const T* gate, const T* up, int64_t n, int64_t inter, T* out, cudaStream_t stream) {
  const int64_t count = n * inter;
  if (count == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((count + kThreads - 1) / kThreads, 65535);
  silu_and_mul_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(gate, up, count, out);
}

#define TESSERA_INSTANTIATE(T) \
  template void silu_and_mul<T>(const T*, const T*, int64_t, int64_t, T*, cudaStream_t);
TESSERA_FOR_EACH_ELEM(TESSERA_INSTANTIATE)

}  // namespace tessera::cuda
