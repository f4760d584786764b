// What CUDA devices the process sees. Compiled whenever nvcc is present; linked by the
// CUDA backend (the CPU build never depends on it).
#pragma once

#include <string>

namespace tessera::cuda {

// One line per device ("0: NVIDIA H200, sm_90, 139 GiB"), or why none is usable.
std::string describe_devices();

}  // namespace tessera::cuda
