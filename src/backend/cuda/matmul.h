// bf16 GEMM through cuBLASLt with fp32 accumulation: out [n, m] = x [n, k] . w^T, for
// weights stored [m, k] (out_features x in_features, as checkpoints keep them).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
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

  // Empty when queued, else what cuBLASLt refused. out is bf16 [n, m].
  std::string matmul(const bf16* x, const bf16* w, int64_t n, int64_t k, int64_t m, bf16* out, cudaStream_t stream);
  // The same with fp32 output (logits).
  std::string matmul_f32(const bf16* x, const bf16* w, int64_t n, int64_t k, int64_t m, float* out,
                         cudaStream_t stream);
  // out [n, m] = bf16(x . w^T + out): the residual add in the GEMM (one rounding).
  std::string matmul_add(const bf16* x, const bf16* w, int64_t n, int64_t k, int64_t m, bf16* out,
                         cudaStream_t stream);

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
  Plan& plan(int64_t n, int64_t k, int64_t m, cudaDataType_t out_type);
  std::string run(const bf16* x, const bf16* w, int64_t n, int64_t k, int64_t m, void* out, cudaDataType_t out_type,
                  float beta, cudaStream_t stream);
  // Times p's candidates on these operands (into a scratch output) and keeps the fastest.
  void tune(Plan& p, const bf16* x, const bf16* w, size_t out_bytes, cudaStream_t stream);

  const CublasLtApi* lt_ = nullptr;  // null: cuBLASLt could not be loaded (load_error_)
  std::string load_error_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 32u << 20;
  int64_t tune_max_rows_ = 0;
  void* tune_out_ = nullptr;  // scratch output of tuning runs
  size_t tune_out_bytes_ = 0;
  std::map<std::tuple<int64_t, int64_t, int64_t, int>, Plan> plans_;
};

}  // namespace tessera::cuda
