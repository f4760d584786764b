#include "kv/kv_cache.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tessera {

KvCache::ResidentFloats::ResidentFloats(size_t count) : bytes_(count * sizeof(float)) {
  if (bytes_ == 0) return;
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    bytes_ = 0;
    throw std::runtime_error("the host KV cache could not reserve " + std::to_string(count * sizeof(float) >> 20) +
                             " MiB of memory (" + std::strerror(err) + "); lower --kv-cache-memory");
  }
  data_ = static_cast<float*>(p);
}

KvCache::ResidentFloats::~ResidentFloats() {
  if (data_ != nullptr) munmap(data_, bytes_);
}

}  // namespace tessera
