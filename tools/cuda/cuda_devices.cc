// Prints the CUDA devices this build sees (scripts/gpu-check.sh runs it first): proof that
// the CUDA library links and the driver answers. Exit 1 when no device is usable.
#include <cstdio>
#include <string>

#include "backend/cuda/device_info.h"

int main() {
  const std::string devices = tessera::cuda::describe_devices();
  std::fputs(devices.c_str(), stdout);
  return devices.rfind("no CUDA device", 0) == 0 ? 1 : 0;
}
