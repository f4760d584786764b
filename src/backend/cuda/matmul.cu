// Row-major out [n, m] = x [n, k] . w^T is, in cuBLAS's column-major terms,
// D (m x n, ld m) = op(A) . B with A = w seen as k x m (ld k, transposed) and B = x seen as
// k x n (ld k): no copies, one cublasLtMatmul with the heuristic's first algorithm.
#include "backend/cuda/matmul.h"

namespace tessera::cuda {

namespace {

std::string status_text(const char* what, cublasStatus_t s) {
  return std::string(what) + " failed: cuBLAS status " + std::to_string(static_cast<int>(s));
}

}  // namespace

Gemm::Gemm() {
  cublasLtCreate(&handle_);
  cudaMalloc(&workspace_, workspace_bytes_);
}

Gemm::~Gemm() {
  cudaFree(workspace_);
  cublasLtDestroy(handle_);
}

std::string Gemm::matmul(const bf16* x, const bf16* w, int64_t n, int64_t k, int64_t m, bf16* out,
                         cudaStream_t stream) {
  if (n == 0 || m == 0) return "";
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  std::string error;
  cublasStatus_t s = cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (s != CUBLAS_STATUS_SUCCESS) return status_text("cublasLtMatmulDescCreate", s);
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa));
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb));
  cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, static_cast<uint64_t>(k), static_cast<uint64_t>(m), k);
  cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, static_cast<uint64_t>(k), static_cast<uint64_t>(n), k);
  cublasLtMatrixLayoutCreate(&d, CUDA_R_16BF, static_cast<uint64_t>(m), static_cast<uint64_t>(n), m);
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                       sizeof(workspace_bytes_));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  s = cublasLtMatmulAlgoGetHeuristic(handle_, op, a, b, d, d, pref, 1, &heuristic, &found);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
    error = found == 0 ? "cuBLASLt has no algorithm for this GEMM" : status_text("cublasLtMatmulAlgoGetHeuristic", s);
  } else {
    const float alpha = 1.0f, beta = 0.0f;
    s = cublasLtMatmul(handle_, op, &alpha, w, a, x, b, &beta, out, d, out, d, &heuristic.algo, workspace_,
                       workspace_bytes_, stream);
    if (s != CUBLAS_STATUS_SUCCESS) error = status_text("cublasLtMatmul", s);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(d);
  cublasLtMatrixLayoutDestroy(b);
  cublasLtMatrixLayoutDestroy(a);
  cublasLtMatmulDescDestroy(op);
  return error;
}

}  // namespace tessera::cuda
