#include "kv/kv_cache.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tessera {

const char* kv_dtype_name(KvDtype d) {
  switch (d) {
    case KvDtype::kFloat32:
      return "float32";
    case KvDtype::kFloat16:
      return "float16";
    case KvDtype::kBfloat16:
      return "bfloat16";
  }
  return "?";
}

KvCache::ResidentBytes::ResidentBytes(size_t bytes) : bytes_(bytes) {
  if (bytes_ == 0) return;
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    bytes_ = 0;
    throw std::runtime_error("the host KV cache could not reserve " + std::to_string(bytes >> 20) +
                             " MiB of memory (" + std::strerror(err) + "); lower --kv-cache-memory");
  }
  data_ = static_cast<std::byte*>(p);
}

KvCache::ResidentBytes::~ResidentBytes() {
  if (data_ != nullptr) munmap(data_, bytes_);
}

}  // namespace tessera
