#include <cuda_runtime.h>

#include <cstdio>

#include "backend/cuda/device_info.h"

namespace tessera::cuda {

std::string describe_devices() {
  int count = 0;
  if (cudaError_t err = cudaGetDeviceCount(&count); err != cudaSuccess) {
    return std::string("no CUDA device: ") + cudaGetErrorString(err);
  }
  std::string out;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    char line[256];
    std::snprintf(line, sizeof(line), "%d: %s, sm_%d%d, %zu GiB\n", i, p.name, p.major, p.minor,
                  p.totalGlobalMem >> 30);
    out += line;
  }
  return out;
}

}  // namespace tessera::cuda
