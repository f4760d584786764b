// y = x w^T for fp32 activations against weights stored in any supported format.
#pragma once

#include <cstdint>
#include <span>

#include "tensor/tensor.h"

namespace tessera::cpu {

// y[i, j] = sum_k x[i, k] * w[j, k] for i < m, j < n = w.rows(), k = w.cols().
//   x: [m, k] fp32, row stride k;  y: [m, n] fp32, row stride n;
//   w: [n, k] of F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K or Q6_K, read in
//      place (any alignment; rows row_bytes(dtype, k) apart).
// Float weights: fp32 FMA dot products. Quantized weights: x is quantized once per call to
// 8-bit blocks of 32 (scale = max|x| / 127), each weight block is dotted in integers and
// scaled in fp32, as llama.cpp does; error ~1e-2 relative to sum |x||w|.
// Runs on omp_get_max_threads() threads (one parallel region per call); call from one
// thread at a time per thread-local scratch (each calling thread has its own). y must not
// alias x.
void matmul(const float* x, int64_t m, const TensorView& w, float* y);

// How quantized-weight matmuls quantize their fp32 activations.
enum class ActivationPrecision {
  kInt8,     // 8-bit blocks of 32, as llama.cpp does: logprobs within ~0.2 of an fp32
             // reference on real models
  kPrecise,  // ~15-bit: 16-bit blocks of 32 for Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 (vpmaddwd, about
             // the cost of int8 in decode); K-quants run x = Q(x) + Q(x - Q(x)), two 8-bit
             // passes. Matches an fp32 reference to ~1e-3 in logprob.
};
// Process-wide; set before running models (not while a matmul is in flight).
void set_activation_precision(ActivationPrecision p);
ActivationPrecision activation_precision();

struct MatmulOutput {
  const TensorView* w;  // [n_t, k]
  float* y;             // [m, n_t]
};
// matmul(x, m, *outs[t].w, outs[t].y) for every t (at most 8 weights, all with k columns,
// any mix of dtypes), in one parallel region with x quantized once: for projections that
// share an input (q/k/v, gate/up). Same results, bit for bit, as separate matmul calls.
void matmul_multi(const float* x, int64_t m, std::span<const MatmulOutput> outs);

}  // namespace tessera::cpu
