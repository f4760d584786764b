// Embedding lookup: one block per token copies its table row.
#include "backend/cuda/ops.h"

namespace tessera::cuda {
namespace {

__global__ void embedding_kernel(const bf16* __restrict__ table, int64_t vocab, int64_t dim,
                                 const int32_t* __restrict__ ids, bf16* __restrict__ out) {
  const int64_t t = blockIdx.x;
  const int64_t id = ids[t];
  bf16* o = out + t * dim;
  const bool valid = id >= 0 && id < vocab;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) o[i] = valid ? table[id * dim + i] : __float2bfloat16(0.0f);
}

}  // namespace

void embedding(const bf16* table, int64_t vocab, int64_t dim, const int32_t* ids, int64_t n, bf16* out,
               cudaStream_t stream) {
  if (n == 0) return;
  embedding_kernel<<<static_cast<unsigned>(n), 256, 0, stream>>>(table, vocab, dim, ids, out);
}

}  // namespace tessera::cuda
