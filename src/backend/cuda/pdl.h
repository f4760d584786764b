// Programmatic dependent launch (sm_90): a kernel launched with launch_pdl may start while
// the kernel before it in the stream is still running, so its launch and prologue overlap
// that kernel's tail. Rules for every kernel launched so:
//   - pdl_wait() before it reads anything an earlier kernel wrote or writes anything an
//     earlier kernel reads (only constant data, such as weights, may be touched before), and
//     in every CTA, so that its completion implies its predecessors' (the chain stays
//     transitive for the kernels after it);
//   - pdl_launch_dependents() as early as the next kernel may start its own prologue.
// Without the launch attribute both are no-ops, so the same kernels run in plain launches.
#pragma once

#include <cuda_runtime.h>

namespace tessera::cuda {

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// kernel<<<grid, block, smem, stream>>>(args...), with programmatic stream serialization
// when pdl is set.
template <typename... KernelArgs, typename... Args>
cudaError_t launch_pdl(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                       bool pdl, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = pdl ? attr : nullptr;
  config.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, static_cast<KernelArgs>(args)...);
}

}  // namespace tessera::cuda
