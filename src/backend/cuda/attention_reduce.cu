// The split-KV half of paged attention (attention.cu): how many splits a batch gets, the
// workspace they need, and the merge of their partials. Split s of a (token, head) row left
// acc_s = sum_j 2^(x_j - m_s) v_j, its max m_s and l_s = sum_j 2^(x_j - m_s) (base 2, see
// attention.cu), or l_s = 0 when its key range was empty; with M = max_s m_s,
//   out = sum_s 2^(m_s - M) acc_s / sum_s 2^(m_s - M) l_s.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cuda/attention_internal.h"
#include "backend/cuda/pdl.h"

namespace tessera::cuda {
namespace {

__device__ __forceinline__ float exp2_approx(float x) {  // 2^-inf = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// One warp per (token, head) row: the log-sum-exp merge of its splits' partials.
__global__ void __launch_bounds__(128) attention_reduce_kernel(const float* __restrict__ part_acc,
                                                               const float* __restrict__ part_m,
                                                               const float* __restrict__ part_l, int64_t rows,
                                                               const int32_t* __restrict__ tokens, int num_heads,
                                                               int num_splits, int head_dim, bf16* __restrict__ out) {
  pdl_wait();  // launched with PDL (pdl.h)
  pdl_launch_dependents();
  int64_t row = int64_t{blockIdx.x} * 4 + threadIdx.x / 32;
  if (row >= rows) return;
  if (tokens != nullptr) row = int64_t{tokens[row / num_heads]} * num_heads + row % num_heads;
  const int lane = threadIdx.x % 32;
  const float* m = part_m + row * num_splits;
  const float* l = part_l + row * num_splits;
  float big = -INFINITY;
  for (int s = lane; s < num_splits; s += 32) {
    if (l[s] > 0.0f) big = fmaxf(big, m[s]);
  }
  for (int o = 16; o > 0; o /= 2) big = fmaxf(big, __shfl_xor_sync(0xffffffffu, big, o));
  float total = 0.0f;
  for (int s = lane; s < num_splits; s += 32) {
    if (l[s] > 0.0f) total += l[s] * exp2_approx(m[s] - big);
  }
  for (int o = 16; o > 0; o /= 2) total += __shfl_xor_sync(0xffffffffu, total, o);
  const float inv = 1.0f / total;
  for (int d = 4 * lane; d < head_dim; d += 128) {
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int s = 0; s < num_splits; ++s) {
      if (!(l[s] > 0.0f)) continue;  // an empty split: its acc was never written
      const float w = exp2_approx(m[s] - big);
      const float4 a = *reinterpret_cast<const float4*>(part_acc + (row * num_splits + s) * head_dim + d);
      sum.x += w * a.x, sum.y += w * a.y, sum.z += w * a.z, sum.w += w * a.w;
    }
    const __nv_bfloat162 lo = __floats2bfloat162_rn(sum.x * inv, sum.y * inv);
    const __nv_bfloat162 hi = __floats2bfloat162_rn(sum.z * inv, sum.w * inv);
    uint2 v;
    v.x = *reinterpret_cast<const uint32_t*>(&lo);
    v.y = *reinterpret_cast<const uint32_t*>(&hi);
    *reinterpret_cast<uint2*>(out + row * head_dim + d) = v;
  }
}

}  // namespace

namespace detail {

void attention_reduce(const float* part_acc, const float* part_m, const float* part_l, int64_t rows,
                      const int32_t* tokens, int64_t num_heads, int num_splits, int64_t head_dim, bf16* out,
                      cudaStream_t stream) {
  launch_pdl(attention_reduce_kernel, dim3(static_cast<unsigned>((rows + 3) / 4)), dim3(128), 0, stream, true, part_acc,
             part_m, part_l, rows, tokens, static_cast<int>(num_heads), num_splits, static_cast<int>(head_dim), out);
}

}  // namespace detail

// At least 4 CTAs per SM: 3 fit at once (head_dim <= 128, G <= 8), so a batch of a few long
// CTAs does not leave most SMs idle behind its last wave. One split per token from 132 x 4 /
// num_kv_heads tokens on (66 with 8 KV heads); at most one split per 256 keys of max_context.
int attention_num_splits(int64_t num_tokens, int64_t num_kv_heads, int num_sms, int64_t max_context) {
  const int64_t ctas = std::max<int64_t>(1, num_tokens * num_kv_heads);
  const int64_t want = (4 * int64_t{std::max(num_sms, 1)} + ctas - 1) / ctas;
  const int64_t cap = std::max<int64_t>(1, (max_context + 255) / 256);
  return static_cast<int>(std::clamp<int64_t>(want, 1, cap));
}

size_t attention_workspace_bytes(int64_t num_tokens, int64_t num_heads, int64_t head_dim, int num_splits) {
  if (num_splits <= 1) return 0;
  return static_cast<size_t>(num_tokens * num_heads * num_splits * (head_dim + 2)) * sizeof(float);
}

}  // namespace tessera::cuda
