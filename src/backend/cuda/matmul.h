// bf16 GEMM through cuBLASLt with fp32 accumulation: out [n, m] = x [n, k] . w^T, for
// weights stored [m, k] (out_features x in_features, as checkpoints keep them).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "backend/cuda/ops.h"

namespace tessera::cuda {

// One cuBLASLt handle and its workspace, per device and stream user.
class Gemm {
 public:
  Gemm();
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // Empty when queued, else what cuBLASLt refused.
  std::string matmul(const bf16* x, const bf16* w, int64_t n, int64_t k, int64_t m, bf16* out, cudaStream_t stream);

 private:
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 32u << 20;
};

}  // namespace tessera::cuda
