// 16-bit GEMM (bf16 or fp16 operands, T) through cuBLASLt with fp32 accumulation: out [n, m] = x [n, k] . w^T, for
// weights stored [m, k] (out_features x in_features, as checkpoints keep them).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "backend/cuda/cublaslt_loader.h"
#include "backend/cuda/ops.h"

namespace tessera::cuda {

// One cuBLASLt handle and its workspace, per device and stream user. The descriptors and
// the algorithm are cached per shape, so a repeated GEMM costs one call. With tuning on
// (set_tuning), shapes of up to the given rows (decode batches: memory-bound, where the
// heuristic's first pick is often slow) are tuned on their first call outside a CUDA graph
// capture: the heuristic's best candidates are timed on the call's own operands (into a
// scratch output) and the fastest is kept. Off unless set.
class Gemm {
 public:
  Gemm();
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // Empty when queued, else what cuBLASLt refused. x, w, out of one element type T (bf16
  // or f16); out [n, m].
  template <typename T>
  std::string matmul(const T* x, const T* w, int64_t n, int64_t k, int64_t m, T* out, cudaStream_t stream) {
    return run(x, w, elem_type<T>(), n, k, m, out, elem_type<T>(), 0.0f, stream);
  }
  // The same with fp32 output (logits).
  template <typename T>
  std::string matmul_f32(const T* x, const T* w, int64_t n, int64_t k, int64_t m, float* out, cudaStream_t stream) {
    return run(x, w, elem_type<T>(), n, k, m, out, CUDA_R_32F, 0.0f, stream);
  }
  // out [n, m] = T(x . w^T + out): the residual add in the GEMM (one rounding).
  template <typename T>
  std::string matmul_add(const T* x, const T* w, int64_t n, int64_t k, int64_t m, T* out, cudaStream_t stream) {
    return run(x, w, elem_type<T>(), n, k, m, out, elem_type<T>(), 1.0f, stream);
  }

  static constexpr int64_t kTuneMaxRows = 512;
  // Tunes shapes of up to max_rows rows (at most kTuneMaxRows; 0: no tuning).
  void set_tuning(int64_t max_rows) { tune_max_rows_ = std::min(max_rows, kTuneMaxRows); }

 private:
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    std::vector<cublasLtMatmulAlgo_t> candidates;  // untried alternatives (tuning pending)
    std::string error;  // non-empty: no algorithm for this shape
  };
  template <typename T>
  static constexpr cudaDataType_t elem_type() {
    static_assert(std::is_same_v<T, bf16> || std::is_same_v<T, f16>, "a 16-bit element type");
    return std::is_same_v<T, bf16> ? CUDA_R_16BF : CUDA_R_16F;
  }
  Plan& plan(int64_t n, int64_t k, int64_t m, cudaDataType_t in_type, cudaDataType_t out_type);
  std::string run(const void* x, const void* w, cudaDataType_t in_type, int64_t n, int64_t k, int64_t m, void* out,
                  cudaDataType_t out_type, float beta, cudaStream_t stream);
  // Times p's candidates on these operands (into a scratch output) and keeps the fastest.
  void tune(Plan& p, const void* x, const void* w, size_t out_bytes, cudaStream_t stream);

  const CublasLtApi* lt_ = nullptr;  // null: cuBLASLt could not be loaded (load_error_)
  std::string load_error_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 32u << 20;
  int64_t tune_max_rows_ = 0;
  void* tune_out_ = nullptr;  // scratch output of tuning runs
  size_t tune_out_bytes_ = 0;
  std::map<std::tuple<int64_t, int64_t, int64_t, int, int>, Plan> plans_;
};

}  // namespace tessera::cuda
