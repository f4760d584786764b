// Owning device and pinned-host allocations, and CUDA errors as Status.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>

#include "common/status.h"

namespace tessera::cuda {

inline Status cuda_status(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return Status();
  return Status::error(what + ": " + cudaGetErrorString(e));
}

#define TESSERA_CUDA_TRY(expr, what)                                   \
  do {                                                                 \
    if (::tessera::Status s_ = ::tessera::cuda::cuda_status((expr), (what)); !s_.ok()) return s_; \
  } while (0)

// count elements of T in device memory (cudaMalloc) or pinned host memory (cudaMallocHost).
template <typename T, bool kHost = false>
class Buffer {
 public:
  Buffer() = default;
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  Status allocate(size_t count, const std::string& what) {
    reset();
    void* p = nullptr;
    const size_t bytes = (count == 0 ? 1 : count) * sizeof(T);
    const cudaError_t e = kHost ? cudaMallocHost(&p, bytes) : cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
      return Status::error("cannot allocate " + std::to_string(bytes >> 20) + " MiB of " +
                           (kHost ? "pinned host" : "device") + " memory for " + what + ": " + cudaGetErrorString(e));
    }
    p_ = static_cast<T*>(p);
    n_ = count;
    return Status();
  }
  void reset() {
    if (p_ != nullptr) kHost ? cudaFreeHost(p_) : cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* get() const { return p_; }
  size_t size() const { return n_; }
  T& operator[](size_t i) const { return p_[i]; }  // host buffers only

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

template <typename T>
using DeviceBuffer = Buffer<T, false>;
template <typename T>
using PinnedBuffer = Buffer<T, true>;

}  // namespace tessera::cuda
