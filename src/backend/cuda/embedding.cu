// Embedding lookup: one block per token copies its table row.
#include <cstdint>

#include "backend/cuda/elem.cuh"
#include "backend/cuda/ops.h"
#include "backend/cuda/pdl.h"

namespace tessera::cuda {
namespace {

template <typename T>
__global__ void embedding_kernel(const T* __restrict__ table, int64_t vocab, int64_t dim,
                                 const int32_t* __restrict__ ids, T* __restrict__ out) {
  // Launched plainly (it follows host copies); the next kernel, launched with PDL, may load
  // its weights meanwhile and waits for this one's completion (pdl.h).
  pdl_launch_dependents();
  const int64_t t = blockIdx.x;
  const int64_t id = ids[t];
  T* o = out + t * dim;
  const bool valid = id >= 0 && id < vocab;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) o[i] = valid ? table[id * dim + i] : from_f32<T>(0.0f);
}

// dim % 8 == 0, 16-byte aligned rows: 16-byte copies, all of a thread's loads in flight
// before its stores (a decode step's row comes from HBM: one round trip, not one per element).
__global__ void embedding_vec_kernel(const uint4* __restrict__ table, int64_t vocab, int64_t dim8,
                                     const int32_t* __restrict__ ids, uint4* __restrict__ out) {
  pdl_launch_dependents();  // as embedding_kernel
  constexpr int kBatch = 4;
  const int64_t t = blockIdx.x;
  const int64_t id = ids[t];
  const bool valid = id >= 0 && id < vocab;
  const uint4* src = table + (valid ? id : 0) * dim8;
  uint4* o = out + t * dim8;
  for (int64_t i = threadIdx.x; i < dim8; i += kBatch * blockDim.x) {
    uint4 v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int64_t k = i + u * blockDim.x;
      v[u] = valid && k < dim8 ? src[k] : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (i + u * blockDim.x < dim8) o[i + u * blockDim.x] = v[u];
    }
  }
}

}  // namespace

template <typename T>
void embedding(const T* table, int64_t vocab, int64_t dim, const int32_t* ids, int64_t n, T* out,
               cudaStream_t stream) {
  if (n == 0) return;
  const bool aligned = reinterpret_cast<uintptr_t>(table) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
  if (dim % 8 == 0 && aligned) {
    embedding_vec_kernel<<<static_cast<unsigned>(n), 128, 0, stream>>>(
        reinterpret_cast<const uint4*>(table), vocab, dim / 8, ids, reinterpret_cast<uint4*>(out));
    return;
  }
  embedding_kernel<<<static_cast<unsigned>(n), 256, 0, stream>>>(table, vocab, dim, ids, out);
}

#define TESSERA_INSTANTIATE(T) \
  template void embedding<T>(const T*, int64_t, int64_t, const int32_t*, int64_t, T*, cudaStream_t);
TESSERA_FOR_EACH_ELEM(TESSERA_INSTANTIATE)

}  // namespace tessera::cuda
