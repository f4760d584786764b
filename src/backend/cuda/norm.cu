// RMSNorm and fused residual-add + RMSNorm: one block per row; the sum of squares is
// reduced in fp32 across the block, then each thread scales its elements (16-byte pieces
// held in registers where the row allows, else element by element).
#include <cstdint>

#include "backend/cuda/elem.cuh"
#include "backend/cuda/ops.h"
#include "backend/cuda/pdl.h"

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

template <typename T>
__global__ void rms_norm_kernel(const T* __restrict__ x, const T* __restrict__ weight, float eps,
                                int64_t dim, T* out) {
  const T* row = x + blockIdx.x * dim;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    const float v = to_f32(row[i]);
    ss += v * v;
  }
  const float inv_rms = rsqrtf(block_sum(ss) / static_cast<float>(dim) + eps);
  T* o = out + blockIdx.x * dim;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    o[i] = from_f32<T>(to_f32(row[i]) * inv_rms * to_f32(weight[i]));
  }
}

template <typename T>
__global__ void fused_add_rms_norm_kernel(T* x, T* residual, const T* __restrict__ weight, float eps,
                                          int64_t dim) {
  T* xr = x + blockIdx.x * dim;
  T* rr = residual + blockIdx.x * dim;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    const T sum = from_f32<T>(to_f32(xr[i]) + to_f32(rr[i]));
    rr[i] = sum;  // the residual stream stays in T, as unfused
    const float v = to_f32(sum);
    ss += v * v;
  }
  const float inv_rms = rsqrtf(block_sum(ss) / static_cast<float>(dim) + eps);
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    xr[i] = from_f32<T>(to_f32(rr[i]) * inv_rms * to_f32(weight[i]));
  }
}

// Rows of dim % 8 == 0 up to kThreads * 8 * V elements: each thread keeps its V 16-byte
// pieces of the row in registers, so the row is read once (and the residual written once).
template <typename T, int V, bool kAdd>
__global__ void rms_norm_vec_kernel(T* x, T* residual, const T* __restrict__ weight, float eps, int dim,
                                    T* out) {
  pdl_wait();  // launched with PDL (pdl.h)
  pdl_launch_dependents();
  const int chunks = dim / 8;
  const int64_t row = int64_t{blockIdx.x} * dim;
  uint4 v[V];
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const int c = threadIdx.x + i * kThreads;
    if (c >= chunks) break;
    v[i] = *reinterpret_cast<const uint4*>(x + row + c * 8);
    auto* h = reinterpret_cast<elem_x2<T>*>(&v[i]);
    if constexpr (kAdd) {
      const uint4 r = *reinterpret_cast<const uint4*>(residual + row + c * 8);
      const auto* rh = reinterpret_cast<const elem_x2<T>*>(&r);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 a = to_f32x2(h[j]), b = to_f32x2(rh[j]);
        h[j] = from_f32x2<T>(a.x + b.x, a.y + b.y);  // the residual stream stays in T
      }
      *reinterpret_cast<uint4*>(residual + row + c * 8) = v[i];
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 a = to_f32x2(h[j]);
      ss += a.x * a.x + a.y * a.y;
    }
  }
  const float inv_rms = rsqrtf(block_sum(ss) / static_cast<float>(dim) + eps);
#pragma unroll
  for (int i = 0; i < V; ++i) {
    const int c = threadIdx.x + i * kThreads;
    if (c >= chunks) break;
    const uint4 w = *reinterpret_cast<const uint4*>(weight + c * 8);
    const auto* h = reinterpret_cast<const elem_x2<T>*>(&v[i]);
    const auto* wh = reinterpret_cast<const elem_x2<T>*>(&w);
    uint4 o;
    auto* oh = reinterpret_cast<elem_x2<T>*>(&o);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 a = to_f32x2(h[j]), b = to_f32x2(wh[j]);
      oh[j] = from_f32x2<T>(a.x * inv_rms * b.x, a.y * inv_rms * b.y);
    }
    *reinterpret_cast<uint4*>(out + row + c * 8) = o;
  }
}

// Launches the vectorized kernel when the shape and alignment allow; false otherwise.
template <typename T, bool kAdd>
bool launch_vec(T* x, T* residual, const T* weight, float eps, int64_t n, int64_t dim, T* out,
                cudaStream_t stream) {
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  if (dim % 8 != 0 || !aligned(x) || !aligned(weight) || !aligned(out) || (kAdd && !aligned(residual))) return false;
  const int64_t per_thread = (dim / 8 + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(n);
  const int d = static_cast<int>(dim);
  auto go = [&](auto kernel) {
    launch_pdl(kernel, dim3(grid), dim3(kThreads), 0, stream, true, x, residual, weight, eps, d, out);
  };
  if (per_thread <= 1) {
    go(rms_norm_vec_kernel<T, 1, kAdd>);
  } else if (per_thread <= 2) {
    go(rms_norm_vec_kernel<T, 2, kAdd>);
  } else if (per_thread <= 4) {
    go(rms_norm_vec_kernel<T, 4, kAdd>);
  } else {
    return false;
  }
  return true;
}

}  // namespace

template <typename T>
void rms_norm(const T* x, const T* weight, float eps, int64_t n, int64_t dim, T* out, cudaStream_t stream) {
  if (n == 0) return;
  // x is only read (the kernel's x is not const for the fused variant's sake).
  if (launch_vec<T, false>(const_cast<T*>(x), nullptr, weight, eps, n, dim, out, stream)) return;
  rms_norm_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(x, weight, eps, dim, out);
}

template <typename T>
void fused_add_rms_norm(T* x, T* residual, const T* weight, float eps, int64_t n, int64_t dim,
                        cudaStream_t stream) {
  if (n == 0) return;
  if (launch_vec<T, true>(x, residual, weight, eps, n, dim, x, stream)) return;
  fused_add_rms_norm_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(x, residual, weight, eps, dim);
}

#define TESSERA_INSTANTIATE(T)                                                                        \
  template void rms_norm<T>(const T*, const T*, float, int64_t, int64_t, T*, cudaStream_t);            \
  template void fused_add_rms_norm<T>(T*, T*, const T*, float, int64_t, int64_t, cudaStream_t);
TESSERA_FOR_EACH_ELEM(TESSERA_INSTANTIATE)

}  // namespace tessera::cuda
