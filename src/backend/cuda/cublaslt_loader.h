// cuBLASLt, loaded on first use instead of at program start: mapping the library costs
// ~150 MiB of resident memory (docs/benchmarks.md), which a run on the CPU must not pay.
// The entry points the GEMMs use, resolved once with dlopen/dlsym.
#pragma once

#include <cublasLt.h>

#include <string>

namespace tessera::cuda {

struct CublasLtApi {
  decltype(&::cublasLtCreate) Create;
  decltype(&::cublasLtDestroy) Destroy;
  decltype(&::cublasLtMatmul) Matmul;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic;
  decltype(&::cublasLtMatmulDescCreate) MatmulDescCreate;
  decltype(&::cublasLtMatmulDescDestroy) MatmulDescDestroy;
  decltype(&::cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute;
  decltype(&::cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate;
  decltype(&::cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute;
  decltype(&::cublasLtMatrixLayoutCreate) MatrixLayoutCreate;
  decltype(&::cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy;
};

// The API, loaded by the first call (thread-safe); null when the library or one of its
// symbols is missing, with why in *error.
const CublasLtApi* cublaslt(std::string* error);

}  // namespace tessera::cuda
