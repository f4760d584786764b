// Paged attention for head dims the tensor-core kernel (attention.cu) does not take (the
// tiny test models' 16 and 32, or any even size up to 256): one thread block per (query
// token, head), keys in chunks with an online softmax:
//   m_new = max(m, max_j s_j);  l = l * e^(m - m_new) + sum_j e^(s_j - m_new)
//   acc   = acc * e^(m - m_new) + sum_j e^(s_j - m_new) v_j;  out = acc / l
// Correctness over speed: no real model with these head dims is served fast. Templated over
// the 16-bit element type T (bf16 or fp16).
#include <cfloat>

#include "backend/cuda/attention_internal.h"
#include "backend/cuda/elem.cuh"

namespace tessera::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kChunk = 512;      // keys scored per round
constexpr int kMaxHeadDim = 256;
constexpr int kDimsPerThread = kMaxHeadDim / kThreads;

// Reduces v over the block with op (max or sum); every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float v, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float o = __shfl_xor_sync(0xffffffffu, v, offset);
    v = kMax ? fmaxf(v, o) : v + o;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = scratch[0];
  for (int w = 1; w < kThreads / 32; ++w) r = kMax ? fmaxf(r, scratch[w]) : r + scratch[w];
  __syncthreads();
  return r;
}

template <typename T>
__global__ void paged_attention_kernel(const T* __restrict__ q, const T* __restrict__ k_cache,
                                       const T* __restrict__ v_cache, AttentionMetadata meta, AttentionShape shape,
                                       T* __restrict__ out) {
  __shared__ float q_s[kMaxHeadDim];
  __shared__ float p_s[kChunk];
  __shared__ int64_t slot_s[kChunk];
  __shared__ float scratch[kThreads / 32];

  const int64_t t = blockIdx.x, h = blockIdx.y;
  const int64_t hd = shape.head_dim;
  const int64_t kv_head = h / (shape.num_heads / shape.num_kv_heads);
  const int64_t kv_dim = shape.num_kv_heads * hd;
  const int64_t pos = meta.positions[t];
  const int64_t seq = meta.token_seq[t];
  const int32_t* blocks = meta.block_table_ids + meta.block_table_indptr[seq];
  const int64_t first = shape.sliding_window > 0 ? max(int64_t{0}, pos - shape.sliding_window + 1) : 0;

  for (int64_t d = threadIdx.x; d < hd; d += kThreads) {
    q_s[d] = to_f32(q[(t * shape.num_heads + h) * hd + d]) * shape.scale;
  }
  __syncthreads();

  float acc[kDimsPerThread] = {};
  float m = -FLT_MAX, l = 0.0f;
  for (int64_t start = first; start <= pos; start += kChunk) {
    const int n = static_cast<int>(min(static_cast<int64_t>(kChunk), pos + 1 - start));
    float local_max = -FLT_MAX;
    for (int j = threadIdx.x; j < n; j += kThreads) {
      const int64_t key = start + j;
      const int64_t slot = int64_t{blocks[key / shape.block_size]} * shape.block_size + key % shape.block_size;
      slot_s[j] = slot;
      const T* kr = k_cache + slot * kv_dim + kv_head * hd;
      float s = 0.0f;
      for (int64_t d = 0; d < hd; ++d) s += q_s[d] * to_f32(kr[d]);
      p_s[j] = s;
      local_max = fmaxf(local_max, s);
    }
    const float m_new = fmaxf(m, block_reduce<true>(local_max, scratch));
    const float rescale = __expf(m - m_new);
    float local_sum = 0.0f;
    for (int j = threadIdx.x; j < n; j += kThreads) {
      const float e = __expf(p_s[j] - m_new);
      p_s[j] = e;
      local_sum += e;
    }
    l = l * rescale + block_reduce<false>(local_sum, scratch);  // its barrier publishes p_s
    for (int i = 0; i < kDimsPerThread; ++i) {
      const int64_t d = threadIdx.x + i * kThreads;
      if (d >= hd) break;
      float a = acc[i] * rescale;
      for (int j = 0; j < n; ++j) a += p_s[j] * to_f32(v_cache[slot_s[j] * kv_dim + kv_head * hd + d]);
      acc[i] = a;
    }
    m = m_new;
    __syncthreads();  // p_s and slot_s are rewritten next round
  }
  for (int i = 0; i < kDimsPerThread; ++i) {
    const int64_t d = threadIdx.x + i * kThreads;
    if (d < hd) out[(t * shape.num_heads + h) * hd + d] = from_f32<T>(acc[i] / l);
  }
}

}  // namespace

template <typename T>
void paged_attention_any_head_dim(const T* q, const T* k_cache, const T* v_cache, const AttentionMetadata& meta,
                                  const AttentionShape& shape, T* out, cudaStream_t stream) {
  if (meta.num_tokens == 0) return;
  const dim3 grid(static_cast<unsigned>(meta.num_tokens), static_cast<unsigned>(shape.num_heads));
  paged_attention_kernel<T><<<grid, kThreads, 0, stream>>>(q, k_cache, v_cache, meta, shape, out);
}

#define TESSERA_INSTANTIATE(T)                                                                                \
  template void paged_attention_any_head_dim<T>(const T*, const T*, const T*, const AttentionMetadata&,       \
                                                const AttentionShape&, T*, cudaStream_t);
TESSERA_FOR_EACH_ELEM(TESSERA_INSTANTIATE)
#undef TESSERA_INSTANTIATE

}  // namespace tessera::cuda
