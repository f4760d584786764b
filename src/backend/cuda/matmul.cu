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
  for (auto& [key, p] : plans_) {
    if (p.d) cublasLtMatrixLayoutDestroy(p.d);
    if (p.b) cublasLtMatrixLayoutDestroy(p.b);
    if (p.a) cublasLtMatrixLayoutDestroy(p.a);
    if (p.op) cublasLtMatmulDescDestroy(p.op);
  }
  cudaFree(workspace_);
  cublasLtDestroy(handle_);
}

const Gemm::Plan& Gemm::plan(int64_t n, int64_t k, int64_t m, cudaDataType_t out_type) {
  const auto key = std::make_tuple(n, k, m, static_cast<int>(out_type));
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  Plan& p = plans_[key];
  cublasStatus_t s = cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (s != CUBLAS_STATUS_SUCCESS) {
    p.error = status_text("cublasLtMatmulDescCreate", s);
    return p;
  }
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa));
  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb));
  cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, static_cast<uint64_t>(k), static_cast<uint64_t>(m), k);
  cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, static_cast<uint64_t>(k), static_cast<uint64_t>(n), k);
  cublasLtMatrixLayoutCreate(&p.d, out_type, static_cast<uint64_t>(m), static_cast<uint64_t>(n), m);
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                       sizeof(workspace_bytes_));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  s = cublasLtMatmulAlgoGetHeuristic(handle_, p.op, p.a, p.b, p.d, p.d, pref, 1, &heuristic, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
    p.error = found == 0 ? "cuBLASLt has no algorithm for this GEMM" : status_text("cublasLtMatmulAlgoGetHeuristic", s);
  } else {
    p.algo = heuristic.algo;
  }
  return p;
}

std::string Gemm::run(const bf16* x, const bf16* w, int64_t n, int64_t k, int64_t m, void* out,
                      cudaDataType_t out_type, cudaStream_t stream) {
  if (n == 0 || m == 0) return "";
  const Plan& p = plan(n, k, m, out_type);
  if (!p.error.empty()) return p.error;
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t s = cublasLtMatmul(handle_, p.op, &alpha, w, p.a, x, p.b, &beta, out, p.d, out, p.d, &p.algo,
                                          workspace_, workspace_bytes_, stream);
  return s == CUBLAS_STATUS_SUCCESS ? "" : status_text("cublasLtMatmul", s);
}

std::string Gemm::matmul(const bf16* x, const bf16* w, int64_t n, int64_t k, int64_t m, bf16* out,
                         cudaStream_t stream) {
  return run(x, w, n, k, m, out, CUDA_R_16BF, stream);
}

std::string Gemm::matmul_f32(const bf16* x, const bf16* w, int64_t n, int64_t k, int64_t m, float* out,
                             cudaStream_t stream) {
  return run(x, w, n, k, m, out, CUDA_R_32F, stream);
}

}  // namespace tessera::cuda
