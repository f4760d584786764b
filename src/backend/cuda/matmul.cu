// Row-major out [n, m] = x [n, k] . w^T is, in cuBLAS's column-major terms,
// D (m x n, ld m) = op(A) . B with A = w seen as k x m (ld k, transposed) and B = x seen as
// k x n (ld k): no copies, one cublasLtMatmul with the heuristic's first algorithm or,
// with tuning on, for up to kTuneMaxRows rows, the fastest of its first kCandidates once timed.
#include "backend/cuda/matmul.h"

namespace tessera::cuda {

namespace {

constexpr int kCandidates = 8;

std::string status_text(const char* what, cublasStatus_t s) {
  return std::string(what) + " failed: cuBLAS status " + std::to_string(static_cast<int>(s));
}

}  // namespace

Gemm::Gemm() : lt_(cublaslt(&load_error_)) {
  if (lt_ != nullptr) lt_->Create(&handle_);
  cudaMalloc(&workspace_, workspace_bytes_);
}

Gemm::~Gemm() {
  for (auto& [key, p] : plans_) {
    if (p.d) lt_->MatrixLayoutDestroy(p.d);
    if (p.b) lt_->MatrixLayoutDestroy(p.b);
    if (p.a) lt_->MatrixLayoutDestroy(p.a);
    if (p.op) lt_->MatmulDescDestroy(p.op);
  }
  cudaFree(tune_out_);
  cudaFree(workspace_);
  if (lt_ != nullptr) lt_->Destroy(handle_);
}

Gemm::Plan& Gemm::plan(int64_t n, int64_t k, int64_t m, cudaDataType_t in_type, cudaDataType_t out_type) {
  const auto key = std::make_tuple(n, k, m, static_cast<int>(in_type), static_cast<int>(out_type));
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  Plan& p = plans_[key];
  if (lt_ == nullptr) {
    p.error = load_error_;
    return p;
  }
  cublasStatus_t s = lt_->MatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (s != CUBLAS_STATUS_SUCCESS) {
    p.error = status_text("cublasLtMatmulDescCreate", s);
    return p;
  }
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  lt_->MatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa));
  lt_->MatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb));
  lt_->MatrixLayoutCreate(&p.a, in_type, static_cast<uint64_t>(k), static_cast<uint64_t>(m), k);
  lt_->MatrixLayoutCreate(&p.b, in_type, static_cast<uint64_t>(k), static_cast<uint64_t>(n), k);
  lt_->MatrixLayoutCreate(&p.d, out_type, static_cast<uint64_t>(m), static_cast<uint64_t>(n), m);
  cublasLtMatmulPreference_t pref = nullptr;
  lt_->MatmulPreferenceCreate(&pref);
  lt_->MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                       sizeof(workspace_bytes_));
  cublasLtMatmulHeuristicResult_t heuristics[kCandidates] = {};
  int found = 0;
  const int wanted = n <= tune_max_rows_ ? kCandidates : 1;
  s = lt_->MatmulAlgoGetHeuristic(handle_, p.op, p.a, p.b, p.d, p.d, pref, wanted, heuristics, &found);
  lt_->MatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
    p.error = found == 0 ? "cuBLASLt has no algorithm for this GEMM" : status_text("cublasLtMatmulAlgoGetHeuristic", s);
  } else {
    p.algo = heuristics[0].algo;
    for (int i = 1; i < found; ++i) {
      if (heuristics[i].state == CUBLAS_STATUS_SUCCESS) p.candidates.push_back(heuristics[i].algo);
    }
  }
  return p;
}

void Gemm::tune(Plan& p, const void* x, const void* w, size_t out_bytes, cudaStream_t stream) {
  if (out_bytes > tune_out_bytes_) {
    cudaStreamSynchronize(stream);
    cudaFree(tune_out_);
    tune_out_ = nullptr;
    tune_out_bytes_ = 0;
    if (cudaMalloc(&tune_out_, out_bytes) != cudaSuccess) {
      cudaGetLastError();  // keep the heuristic's pick
      p.candidates.clear();
      return;
    }
    tune_out_bytes_ = out_bytes;
  }
  void* out = tune_out_;
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  const float alpha = 1.0f, beta = 0.0f;
  std::vector<cublasLtMatmulAlgo_t> all = {p.algo};
  all.insert(all.end(), p.candidates.begin(), p.candidates.end());
  float best_ms = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    auto once = [&] {
      return lt_->Matmul(handle_, p.op, &alpha, w, p.a, x, p.b, &beta, out, p.d, out, p.d, &all[i], workspace_,
                            workspace_bytes_, stream);
    };
    if (once() != CUBLAS_STATUS_SUCCESS) continue;  // warm-up; skips what cannot run
    cudaEventRecord(start, stream);
    for (int r = 0; r < 3; ++r) once();
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (i == 0 || ms < best_ms) {
      best_ms = ms;
      p.algo = all[i];
    }
  }
  p.candidates.clear();
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

std::string Gemm::run(const void* x, const void* w, cudaDataType_t in_type, int64_t n, int64_t k, int64_t m,
                      void* out, cudaDataType_t out_type, float beta, cudaStream_t stream) {
  if (n == 0 || m == 0) return "";
  Plan& p = plan(n, k, m, in_type, out_type);
  if (!p.error.empty()) return p.error;
  if (!p.candidates.empty()) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(stream, &capturing);
    const size_t elem = out_type == CUDA_R_32F ? 4 : 2;
    const size_t out_bytes = static_cast<size_t>(n * m) * elem;
    if (out_bytes > (size_t{64} << 20)) {
      p.candidates.clear();  // large outputs are compute-bound shapes: the heuristic's pick
    } else if (capturing == cudaStreamCaptureStatusNone) {
      tune(p, x, w, out_bytes, stream);
    }
  }
  const float alpha = 1.0f;
  const cublasStatus_t s = lt_->Matmul(handle_, p.op, &alpha, w, p.a, x, p.b, &beta, out, p.d, out, p.d, &p.algo,
                                          workspace_, workspace_bytes_, stream);
  return s == CUBLAS_STATUS_SUCCESS ? "" : status_text("cublasLtMatmul", s);
}

}  // namespace tessera::cuda
