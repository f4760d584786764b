// RoPE: one block per token; each thread rotates pairs (i, i + head_dim/2) or (2i, 2i+1)
// of every head by angle = position * inv_freq[i], the fp32 product HF computes.
#include "backend/cuda/ops.h"

namespace tessera::cuda {
namespace {

__global__ void rope_kernel(bf16* x, const int32_t* __restrict__ positions, int64_t num_heads, int64_t head_dim,
                            const float* __restrict__ inv_freq, bool interleaved) {
  const int64_t t = blockIdx.x;
  const int64_t half = head_dim / 2;
  const float pos = static_cast<float>(positions[t]);
  for (int64_t k = threadIdx.x; k < num_heads * half; k += blockDim.x) {
    const int64_t h = k / half, i = k % half;
    float s, c;
    sincosf(pos * inv_freq[i], &s, &c);
    bf16* v = x + (t * num_heads + h) * head_dim;
    const int64_t ia = interleaved ? 2 * i : i;
    const int64_t ib = interleaved ? 2 * i + 1 : i + half;
    const float a = __bfloat162float(v[ia]), b = __bfloat162float(v[ib]);
    v[ia] = __float2bfloat16(a * c - b * s);
    v[ib] = __float2bfloat16(b * c + a * s);
  }
}

}  // namespace

void apply_rope(bf16* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
                const float* inv_freq, RopeLayout layout, cudaStream_t stream) {
  if (num_tokens == 0) return;
  rope_kernel<<<static_cast<unsigned>(num_tokens), 128, 0, stream>>>(x, positions, num_heads, head_dim, inv_freq,
                                                                     layout == RopeLayout::kInterleaved);
}

}  // namespace tessera::cuda
