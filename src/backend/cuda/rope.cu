// RoPE: one block per token; each thread rotates pairs (i, i + head_dim/2) or (2i, 2i+1)
// of every head by angle = position * inv_freq[i], the fp32 product HF computes.
#include "backend/cuda/elem.cuh"
#include "backend/cuda/ops.h"

namespace tessera::cuda {
namespace {

template <typename T>
__global__ void rope_kernel(T* x, const int32_t* __restrict__ positions, int64_t num_heads, int64_t head_dim,
                            const float* __restrict__ inv_freq, bool interleaved) {
  const int64_t t = blockIdx.x;
  const int64_t half = head_dim / 2;
  const float pos = static_cast<float>(positions[t]);
  for (int64_t k = threadIdx.x; k < num_heads * half; k += blockDim.x) {
    const int64_t h = k / half, i = k % half;
    float s, c;
    sincosf(pos * inv_freq[i], &s, &c);
    T* v = x + (t * num_heads + h) * head_dim;
    const int64_t ia = interleaved ? 2 * i : i;
    const int64_t ib = interleaved ? 2 * i + 1 : i + half;
    const float a = to_f32(v[ia]), b = to_f32(v[ib]);
    v[ia] = from_f32<T>(a * c - b * s);
    v[ib] = from_f32<T>(b * c + a * s);
  }
}

}  // namespace

template <typename T>
void apply_rope(T* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
                const float* inv_freq, RopeLayout layout, cudaStream_t stream) {
  if (num_tokens == 0) return;
  rope_kernel<<<static_cast<unsigned>(num_tokens), 128, 0, stream>>>(x, positions, num_heads, head_dim, inv_freq,
                                                                     layout == RopeLayout::kInterleaved);
}

#define TESSERA_INSTANTIATE(T) \
  template void apply_rope<T>(T*, const int32_t*, int64_t, int64_t, int64_t, const float*, RopeLayout, cudaStream_t);
TESSERA_FOR_EACH_ELEM(TESSERA_INSTANTIATE)

}  // namespace tessera::cuda
