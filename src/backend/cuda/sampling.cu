// Greedy sampling and log-softmax over a row of logits per thread block:
//   pass 1: (max, argmax) with the lowest id winning ties;
//   pass 2: sum_i e^(x_i - max);  log p_i = x_i - max - log(sum).
#include <cfloat>

#include "backend/cuda/ops.h"

namespace tessera::cuda {
namespace {

constexpr int kThreads = 512;

__global__ void greedy_sample_kernel(const float* __restrict__ logits, int64_t vocab, int32_t* __restrict__ next,
                                     float* __restrict__ logprobs) {
  __shared__ float best_v[kThreads / 32];
  __shared__ int32_t best_i[kThreads / 32];
  __shared__ float sums[kThreads / 32];
  const float* row = logits + blockIdx.x * vocab;
  float v = -FLT_MAX;
  int32_t idx = INT32_MAX;
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    const float x = row[i];
    if (x > v) v = x, idx = static_cast<int32_t>(i);  // strided ascending: first max kept
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, offset);
    const int32_t oi = __shfl_xor_sync(0xffffffffu, idx, offset);
    if (ov > v || (ov == v && oi < idx)) v = ov, idx = oi;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) best_v[warp] = v, best_i[warp] = idx;
  __syncthreads();
  float max_v = best_v[0];
  int32_t max_i = best_i[0];
  for (int w = 1; w < kThreads / 32; ++w) {
    if (best_v[w] > max_v || (best_v[w] == max_v && best_i[w] < max_i)) max_v = best_v[w], max_i = best_i[w];
  }
  if (threadIdx.x == 0) next[blockIdx.x] = max_i == INT32_MAX ? 0 : max_i;  // all -inf / NaN: 0, as the CPU
  if (logprobs == nullptr) return;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) s += expf(row[i] - max_v);
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
  if (lane == 0) sums[warp] = s;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) total += sums[w];
  const float lse = max_v + logf(total);
  float* out = logprobs + blockIdx.x * vocab;
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) out[i] = row[i] - lse;
}

}  // namespace

void greedy_sample(const float* logits, int64_t n, int64_t vocab, int32_t* next, float* logprobs,
                   cudaStream_t stream) {
  if (n == 0) return;
  greedy_sample_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(logits, vocab, next, logprobs);
}

}  // namespace tessera::cuda
