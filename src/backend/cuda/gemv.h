// Fused 16-bit GEMV kernels for decode batches (n <= 16 tokens): out [n, m] = x [n, k] . W^T
// for weights W [m, k] row-major (as matmul.h), streamed once from memory with 16-byte
// loads, fp32 accumulation on tensor cores, with the ops around the projections of a decode
// layer folded in. Templates over the element type T of x, W, the norm weights and the
// 16-bit outputs (bf16 or f16, ops.h), instantiated for both:
//   prologue  RMSNorm of the input rows (GemvInput::norm) and/or a gather of them (rows);
//   epilogue  T out, fp32 out (logits), residual += out, or silu(gate) * up.
// The layer becomes
//   qkv = gemv(norm(hidden)); qkv_rope_cache; attention; hidden += gemv_add(attn);
//   act = gemv_silu_mul(norm(hidden)); hidden += gemv_add(act)
// and the logits gemv_f32(norm(hidden)[rows]).
//
// Preconditions (each launcher returns a message instead of queueing when one fails):
// 1 <= n <= kGemvMaxTokens, k % 8 == 0, x / w / norm 16-byte aligned. m is any. x must not
// alias the output (out / residual). No allocation, no host synchronization: CUDA-graph
// safe.
//
// Rounding, against the unfused ops (cuBLASLt GEMM with T out, ops.h):
// - T outputs are rounded once from the fp32 sum; the residual add rounds the product to
//   T and then the sum (residual = T(residual + T(x . W^T))), as a T GEMM output
//   followed by fused_add_rms_norm; silu_mul rounds gate and up to T and then
//   silu(gate) * up, as gate_up GEMM + silu_and_mul_fused.
// - With norm: out = T((sum_i W_i * T(x_i * norm_i)) * inv_rms), inv_rms =
//   1 / sqrt(mean(x^2) + eps) computed in fp32 in the same pass over x. The unfused norm
//   rounds x_i * inv_rms * norm_i instead; the two differ by one T rounding per term
//   (bf16 ~2^-9, f16 ~2^-12 relative, random), well under the T output rounding in effect.
//   (f16: x_i * norm_i must stay in f16's range, as x_i itself does.)
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "backend/cuda/ops.h"

namespace tessera::cuda {

constexpr int64_t kGemvMaxTokens = 16;

// The input rows of a GEMV: row t of the product reads x row (rows ? rows[t] : t).
template <typename T>
struct GemvInput {
  const T* x = nullptr;           // [*, k], row stride k
  const int32_t* rows = nullptr;  // [n] rows of x to use, or null for rows 0 .. n-1
  const T* norm = nullptr;        // [k] RMSNorm weight, or null: no norm
  float eps = 0.0f;               // RMSNorm epsilon (with norm)
};

struct GemvOptions {
  // Launch with programmatic dependent launch: the kernel starts streaming its weights
  // while the previous kernel on the stream finishes and waits for it (griddepcontrol.wait)
  // before reading anything else. Safe after any kernel; it only overlaps anything when
  // the previous kernel lets dependents start early (every GEMV here does, at its start),
  // so chains of these GEMVs overlap each other's ramp-up and tail.
  bool pdl = false;
  // Kernel shape, an index into gemv_variant_count(): 0 (cp.async) or kGemvBulkVariant.
  int variant = 0;
};

// Whether the kernels take n tokens of width k (the pointers' alignment aside).
bool gemv_supported(int64_t n, int64_t k);

// The launchers (T = bf16 or f16). T is deduced from w and the output, so a braced
// GemvInput ({x, rows, norm, eps}) works as the first argument.

// out [n, m] T = x . W^T.
template <typename T>
std::string gemv(const GemvInput<T>& in, const T* w, int64_t n, int64_t k, int64_t m, T* out, cudaStream_t stream,
                 const GemvOptions& opt = {});

// out [n, m] fp32 = x . W^T (the LM head).
template <typename T>
std::string gemv_f32(const GemvInput<T>& in, const T* w, int64_t n, int64_t k, int64_t m, float* out,
                     cudaStream_t stream, const GemvOptions& opt = {});

// residual [n, m] = T(residual + T(x . W^T)) (o-proj, down-proj).
template <typename T>
std::string gemv_add(const GemvInput<T>& in, const T* w, int64_t n, int64_t k, int64_t m, T* residual,
                     cudaStream_t stream, const GemvOptions& opt = {});

// w_gate_up [2 * inter, k]: gate rows, then up rows. out [n, inter] =
// T(silu(g) * u) for g = T(x . gate_j), u = T(x . up_j).
template <typename T>
std::string gemv_silu_mul(const GemvInput<T>& in, const T* w_gate_up, int64_t n, int64_t k, int64_t inter, T* out,
                          cudaStream_t stream, const GemvOptions& opt = {});

// The kernel shapes GemvOptions::variant picks from (the engine's two; bench_gemv sweeps
// more candidates of the same templates, bench/cuda/gemv_sweep.*): warps per CTA (each takes every
// warps-th 64-column step of k) and cp.async pipeline stages per warp; or (bulk) persistent
// CTAs (one or two per SM) streaming tiles of `tile_rows` weight rows through a ring of
// `stages` 16-KB tensor-map boxes, 8 warps doing the math (bulk needs k % 64 == 0; other
// widths run variant 0).
struct GemvVariant {
  int warps;
  int stages;
  bool bulk;
  int tile_rows;
};
int gemv_variant_count();
GemvVariant gemv_variant(int i);

// The bulk variant with a 4-stage ring and two CTAs per SM: the fastest on the large decode
// matrices (gate/up, down, LM head) at 1 and 2 tokens on the H200 (bench_gemv).
constexpr int kGemvBulkVariant = 1;

}  // namespace tessera::cuda
