#include "backend/cuda/cublaslt_loader.h"

#include <dlfcn.h>

namespace tessera::cuda {

namespace {

struct Loaded {
  CublasLtApi api{};
  std::string error;
  bool ok = false;
};

template <typename F>
bool resolve(void* lib, const char* name, F* out, std::string* error) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  if (*out == nullptr) *error = std::string("cuBLASLt lacks ") + name;
  return *out != nullptr;
}

Loaded load() {
  Loaded l;
  // The soname of the toolkit we build against (its major version).
  const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    l.error = "cannot load " + soname + ": " + (why != nullptr ? why : "unknown error");
    return l;
  }
  CublasLtApi& a = l.api;
  l.ok = resolve(lib, "cublasLtCreate", &a.Create, &l.error) && resolve(lib, "cublasLtDestroy", &a.Destroy, &l.error) &&
         resolve(lib, "cublasLtMatmul", &a.Matmul, &l.error) &&
         resolve(lib, "cublasLtMatmulAlgoGetHeuristic", &a.MatmulAlgoGetHeuristic, &l.error) &&
         resolve(lib, "cublasLtMatmulDescCreate", &a.MatmulDescCreate, &l.error) &&
         resolve(lib, "cublasLtMatmulDescDestroy", &a.MatmulDescDestroy, &l.error) &&
         resolve(lib, "cublasLtMatmulDescSetAttribute", &a.MatmulDescSetAttribute, &l.error) &&
         resolve(lib, "cublasLtMatmulPreferenceCreate", &a.MatmulPreferenceCreate, &l.error) &&
         resolve(lib, "cublasLtMatmulPreferenceDestroy", &a.MatmulPreferenceDestroy, &l.error) &&
         resolve(lib, "cublasLtMatmulPreferenceSetAttribute", &a.MatmulPreferenceSetAttribute, &l.error) &&
         resolve(lib, "cublasLtMatrixLayoutCreate", &a.MatrixLayoutCreate, &l.error) &&
         resolve(lib, "cublasLtMatrixLayoutDestroy", &a.MatrixLayoutDestroy, &l.error);
  return l;  // the library stays loaded for the process's life
}

}  // namespace

const CublasLtApi* cublaslt(std::string* error) {
  static const Loaded loaded = load();
  if (!loaded.ok) {
    if (error != nullptr) *error = loaded.error;
    return nullptr;
  }
  return &loaded.api;
}

}  // namespace tessera::cuda
