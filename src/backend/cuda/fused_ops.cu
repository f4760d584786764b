// Fused ops of the device forward pass (see fused_ops.h for the formulas).
#include <algorithm>

#include "backend/cuda/elem.cuh"
#include "backend/cuda/fused_ops.h"
#include "backend/cuda/pdl.h"
#include "backend/cuda/rope_device.cuh"

namespace tessera::cuda {
namespace {

constexpr int kMaxHeadDim = 256;
constexpr int64_t kRopeVecMinTokens = 32;  // the 16-byte kernel from this many tokens

// One block per (token, head of q, k and v); one thread per element pair of the head.
template <typename T>
__global__ void qkv_rope_cache_kernel(const T* __restrict__ qkv, const T* __restrict__ bias,
                                      const T* __restrict__ q_norm, const T* __restrict__ k_norm, float eps,
                                      const int32_t* __restrict__ positions, const int64_t* __restrict__ slot_mapping,
                                      int64_t num_heads, int64_t num_kv_heads, int64_t head_dim,
                                      const float* __restrict__ inv_freq, bool interleaved, T* __restrict__ q_out,
                                      T* __restrict__ k_cache, T* __restrict__ v_cache) {
  __shared__ float x[kMaxHeadDim];
  __shared__ float warp_sums[kMaxHeadDim / 32];
  pdl_wait();  // launched with PDL (pdl.h)
  pdl_launch_dependents();
  const int64_t t = blockIdx.x, h = blockIdx.y;
  const int64_t heads = num_heads + 2 * num_kv_heads;
  const bool is_q = h < num_heads, is_v = h >= num_heads + num_kv_heads;
  const T* in = qkv + (t * heads + h) * head_dim;
  for (int64_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float v = to_f32(in[d]);
    if (bias != nullptr) v += to_f32(bias[h * head_dim + d]);
    x[d] = v;
  }
  __syncthreads();
  const int64_t kv_dim = num_kv_heads * head_dim;
  if (is_v) {
    T* dst = v_cache + slot_mapping[t] * kv_dim + (h - num_heads - num_kv_heads) * head_dim;
    for (int64_t d = threadIdx.x; d < head_dim; d += blockDim.x) dst[d] = from_f32<T>(x[d]);
    return;
  }
  const T* norm = is_q ? q_norm : k_norm;
  if (norm != nullptr) {
    float ss = 0.0f;
    for (int64_t d = threadIdx.x; d < head_dim; d += blockDim.x) ss += x[d] * x[d];
    for (int offset = 16; offset > 0; offset /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, offset);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = ss;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < static_cast<int>((blockDim.x + 31) / 32); ++w) total += warp_sums[w];
    const float inv_rms = rsqrtf(total / static_cast<float>(head_dim) + eps);
    __syncthreads();
    for (int64_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
      // Rounded to T as the unfused norm's output would be.
      x[d] = round_to<T>(x[d] * inv_rms * to_f32(norm[d]));
    }
    __syncthreads();
  }
  T* dst = is_q ? q_out + (t * num_heads + h) * head_dim
                   : k_cache + slot_mapping[t] * kv_dim + (h - num_heads) * head_dim;
  const int64_t half = head_dim / 2;
  const float pos = static_cast<float>(positions[t]);
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    float s, c;
    sincosf(pos * inv_freq[i], &s, &c);
    const int64_t ia = interleaved ? 2 * i : i;
    const int64_t ib = interleaved ? 2 * i + 1 : i + half;
    // The unfused path rounds the projection (and bias) to T before rotating.
    const float a = round_to<T>(x[ia]), b = round_to<T>(x[ib]);
    dst[ia] = from_f32<T>(a * c - b * s);
    dst[ib] = from_f32<T>(b * c + a * s);
  }
}

// The same with 16-byte accesses, one CTA per token (head_dim % 16 == 0, head_dim / 16 a
// power of two, 16-byte aligned rows): the token's cos/sin computed once into shared memory;
// a q or k head is head_dim / 16 lanes of 8 rotation pairs each (rope_device.cuh), adjacent
// in a warp, so the q/k norm reduces with shuffles; a v head is head_dim / 8 lanes of 8 copies.
template <typename T>
__global__ void qkv_rope_cache_vec_kernel(const T* __restrict__ qkv, const T* __restrict__ bias,
                                          const T* __restrict__ q_norm, const T* __restrict__ k_norm,
                                          float eps, const int32_t* __restrict__ positions,
                                          const int64_t* __restrict__ slot_mapping, int num_heads, int num_kv_heads,
                                          int head_dim, const float* __restrict__ inv_freq, bool interleaved,
                                          T* __restrict__ q_out, T* __restrict__ k_cache,
                                          T* __restrict__ v_cache) {
  using namespace rope_detail;
  __shared__ float cos_s[kMaxHeadDim / 2], sin_s[kMaxHeadDim / 2];
  pdl_wait();  // launched with PDL (pdl.h)
  pdl_launch_dependents();
  const int64_t t = blockIdx.x;
  const int half = head_dim / 2, lanes_per_head = head_dim / 16;
  const float pos = static_cast<float>(positions[t]);
  for (int i = threadIdx.x; i < half; i += blockDim.x) sincosf(pos * inv_freq[i], &sin_s[i], &cos_s[i]);
  __syncthreads();
  const int heads = num_heads + 2 * num_kv_heads;
  const T* row = qkv + t * heads * head_dim;
  const int64_t kv_dim = int64_t{num_kv_heads} * head_dim;
  const int64_t slot = slot_mapping[t];

  // q and k heads. Every lane runs the same number of rounds (the norm's shuffles).
  const int rope_lanes = (num_heads + num_kv_heads) * lanes_per_head;
  for (int base = 0; base < rope_lanes; base += blockDim.x) {
    const int task = base + static_cast<int>(threadIdx.x);
    const bool active = task < rope_lanes;
    const int h = active ? task / lanes_per_head : 0, j = task % lanes_per_head;
    const HeadSlice s = head_slice(j, head_dim, interleaved);
    float x[16] = {};
    if (active) load_slice(row + h * head_dim, bias != nullptr ? bias + h * head_dim : nullptr, s, x);
    const bool is_q = h < num_heads;
    if (q_norm != nullptr || k_norm != nullptr) {  // uniform over the CTA
      head_rms_norm(x, active, is_q ? q_norm : k_norm, eps, head_dim, lanes_per_head, s);
    }
    if (!active) continue;
    rotate_slice<T>(x, j, interleaved, cos_s, sin_s);
    store_slice(is_q ? q_out + (t * num_heads + h) * head_dim : k_cache + slot * kv_dim + (h - num_heads) * head_dim,
                s, x);
  }

  // v heads: 8 elements per lane.
  const int v_lanes = num_kv_heads * head_dim / 8;
  for (int i = threadIdx.x; i < v_lanes; i += blockDim.x) {
    const int off = (num_heads + num_kv_heads) * head_dim + 8 * i;
    float v[8];
    load_x8(row + off, v);
    if (bias != nullptr) {
      float bv[8];
      load_x8(bias + off, bv);
#pragma unroll
      for (int e = 0; e < 8; ++e) v[e] += bv[e];
    }
    store_x8(v_cache + slot * kv_dim + 8 * i, v);
  }
}

template <typename T>
__global__ void silu_and_mul_fused_kernel(const T* __restrict__ gate_up, int64_t n, int64_t inter,
                                          T* __restrict__ out) {
  const int64_t count = n * inter;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / inter, j = i % inter;
    const float g = to_f32(gate_up[t * 2 * inter + j]);
    const float u = to_f32(gate_up[t * 2 * inter + inter + j]);
    out[i] = from_f32<T>(g / (1.0f + expf(-g)) * u);
  }
}

// inter % 8 == 0: 8 outputs per thread with 16-byte loads; grid (chunks of the row, token).
template <typename T>
__global__ void silu_and_mul_fused_vec_kernel(const T* __restrict__ gate_up, int64_t inter,
                                              T* __restrict__ out) {
  pdl_wait();  // launched with PDL (pdl.h)
  pdl_launch_dependents();
  const int64_t j = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) * 8, t = blockIdx.y;
  if (j >= inter) return;
  const uint4 gv = *reinterpret_cast<const uint4*>(gate_up + t * 2 * inter + j);
  const uint4 uv = *reinterpret_cast<const uint4*>(gate_up + t * 2 * inter + inter + j);
  const auto* g2 = reinterpret_cast<const elem_x2<T>*>(&gv);
  const auto* u2 = reinterpret_cast<const elem_x2<T>*>(&uv);
  uint4 ov;
  auto* o2 = reinterpret_cast<elem_x2<T>*>(&ov);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 g = to_f32x2(g2[i]), u = to_f32x2(u2[i]);
    o2[i] = from_f32x2<T>(g.x / (1.0f + expf(-g.x)) * u.x, g.y / (1.0f + expf(-g.y)) * u.y);
  }
  *reinterpret_cast<uint4*>(out + t * inter + j) = ov;
}

template <typename T>
__global__ void gather_rows_kernel(const T* __restrict__ x, const int32_t* __restrict__ idx, int64_t dim,
                                   T* __restrict__ out) {
  const T* src = x + static_cast<int64_t>(idx[blockIdx.x]) * dim;
  T* dst = out + blockIdx.x * dim;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) dst[i] = src[i];
}

}  // namespace

template <typename T>
void qkv_rope_cache(const T* qkv, const T* bias, const T* q_norm, const T* k_norm, float eps,
                    const int32_t* positions, const int64_t* slot_mapping, int64_t n, int64_t num_heads,
                    int64_t num_kv_heads, int64_t head_dim, const float* inv_freq, RopeLayout layout, T* q_out,
                    T* k_cache, T* v_cache, cudaStream_t stream) {
  if (n == 0) return;
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  // Decode batches keep the CTA per (token, head): more CTAs for few tokens.
  const int64_t lanes_per_head = head_dim / 16;
  const bool shape_ok = head_dim % 16 == 0 && head_dim <= kMaxHeadDim && (lanes_per_head & (lanes_per_head - 1)) == 0;
  const bool aligned_ok = aligned(qkv) && aligned(q_out) && aligned(k_cache) && aligned(v_cache) &&
                          (bias == nullptr || aligned(bias)) && (q_norm == nullptr || aligned(q_norm)) &&
                          (k_norm == nullptr || aligned(k_norm));
  if (n >= kRopeVecMinTokens && n <= INT32_MAX && shape_ok && aligned_ok) {
    const int64_t lanes = (num_heads + num_kv_heads) * lanes_per_head;
    const int threads = static_cast<int>(std::clamp<int64_t>((lanes + 31) / 32 * 32, 64, 512));
    launch_pdl(qkv_rope_cache_vec_kernel<T>, dim3(static_cast<unsigned>(n)), dim3(threads), 0, stream, true, qkv, bias,
               q_norm, k_norm, eps, positions, slot_mapping, static_cast<int>(num_heads),
               static_cast<int>(num_kv_heads), static_cast<int>(head_dim), inv_freq,
               layout == RopeLayout::kInterleaved, q_out, k_cache, v_cache);
    return;
  }
  const dim3 grid(static_cast<unsigned>(n), static_cast<unsigned>(num_heads + 2 * num_kv_heads));
  const int threads = static_cast<int>(std::min<int64_t>(kMaxHeadDim, std::max<int64_t>(32, (head_dim + 31) / 32 * 32)));
  launch_pdl(qkv_rope_cache_kernel<T>, grid, dim3(threads), 0, stream, true, qkv, bias, q_norm, k_norm, eps, positions,
             slot_mapping, num_heads, num_kv_heads, head_dim, inv_freq, layout == RopeLayout::kInterleaved, q_out,
             k_cache, v_cache);
}

template <typename T>
void silu_and_mul_fused(const T* gate_up, int64_t n, int64_t inter, T* out, cudaStream_t stream) {
  const int64_t count = n * inter;
  if (count == 0) return;
  constexpr int kThreads = 256;
  const bool aligned = reinterpret_cast<uintptr_t>(gate_up) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
  if (inter % 8 == 0 && aligned && n <= 65535) {
    const dim3 grid(static_cast<unsigned>((inter / 8 + kThreads - 1) / kThreads), static_cast<unsigned>(n));
    launch_pdl(silu_and_mul_fused_vec_kernel<T>, grid, dim3(kThreads), 0, stream, true, gate_up, inter, out);
    return;
  }
  const int64_t blocks = std::min<int64_t>((count + kThreads - 1) / kThreads, 65535);
  silu_and_mul_fused_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(gate_up, n, inter, out);
}

template <typename T>
void gather_rows(const T* x, const int32_t* idx, int64_t num_rows, int64_t dim, T* out, cudaStream_t stream) {
  if (num_rows == 0) return;
  gather_rows_kernel<<<static_cast<unsigned>(num_rows), 256, 0, stream>>>(x, idx, dim, out);
}

#define TESSERA_INSTANTIATE(T)                                                                                 \
  template void qkv_rope_cache<T>(const T*, const T*, const T*, const T*, float, const int32_t*, const int64_t*,   \
                                  int64_t, int64_t, int64_t, int64_t, const float*, RopeLayout, T*, T*, T*,       \
                                  cudaStream_t);                                                                   \
  template void silu_and_mul_fused<T>(const T*, int64_t, int64_t, T*, cudaStream_t);                             \
  template void gather_rows<T>(const T*, const int32_t*, int64_t, int64_t, T*, cudaStream_t);
TESSERA_FOR_EACH_ELEM(TESSERA_INSTANTIATE)

}  // namespace tessera::cuda
