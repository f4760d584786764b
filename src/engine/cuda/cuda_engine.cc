#include "engine/cuda/cuda_engine.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "exec/cuda/cuda_model_runner.h"

namespace tessera::cuda {

std::string device_unavailable_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(e);
  if (n == 0) return "no CUDA device";
  return "";
}

Result<std::unique_ptr<EngineCore>> create_cuda_engine(const DecoderModel& model, EngineConfig config) {
  const auto t0 = std::chrono::steady_clock::now();
  TESSERA_CUDA_TRY(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp prop{};
  TESSERA_CUDA_TRY(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const ModelConfig& mc = model.config();
  if (mc.head_dim > 256 || mc.head_dim % 2 != 0) {
    return Status::error("the CUDA backend supports even head_dim up to 256, not " + std::to_string(mc.head_dim));
  }
  cudaStream_t upload_stream = nullptr;
  TESSERA_CUDA_TRY(cudaStreamCreateWithFlags(&upload_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  auto cuda_model = CudaModel::upload(model, config.dtype, upload_stream, config.device.cpu_offload_bytes);
  cudaStreamDestroy(upload_stream);
  if (!cuda_model.ok()) return cuda_model.status();
  const size_t weight_bytes = (*cuda_model)->weight_bytes();
  const size_t offloaded_bytes = (*cuda_model)->offloaded_bytes();
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  auto runner = CudaModelRunner::create(std::move(*cuda_model), config);
  if (!runner.ok()) return runner.status();

  // What is left for the KV cache: the share of the device this engine may use, minus what
  // is in use now (weights, step buffers, other processes), minus headroom for cuBLAS
  // workspaces and CUDA graphs.
  size_t free_bytes = 0, total_bytes = 0;
  TESSERA_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  constexpr int64_t kHeadroom = int64_t{512} << 20;
  const double utilization = config.device.gpu_memory_utilization;
  const int64_t allowed = static_cast<int64_t>(utilization * static_cast<double>(total_bytes));
  const int64_t in_use = static_cast<int64_t>(total_bytes - free_bytes);
  // The KV cache holds K and V as the attention kernels read them: the compute dtype.
  const KvDtype kv = config.dtype == DType::kF16 ? KvDtype::kFloat16 : KvDtype::kBfloat16;
  if (config.cache.kv_dtype && *config.cache.kv_dtype != kv) {
    return Status::error(std::string("kv_cache_dtype ") + kv_dtype_name(*config.cache.kv_dtype) +
                         " is not supported on CUDA, whose KV cache is the compute dtype (" + kv_dtype_name(kv) +
                         ", auto)");
  }
  config.cache.kv_dtype = kv;
  if (config.cache.kv_cache_memory == 0) {  // not set: what the share leaves
    config.cache.kv_cache_memory = allowed - in_use - kHeadroom;
    if (config.cache.kv_cache_memory <= 0) {
      return Status::error("the model needs " + std::to_string(in_use >> 20) + " MiB of the device's " +
                           std::to_string(total_bytes >> 20) + " MiB, more than gpu_memory_utilization " +
                           std::to_string(utilization) + " allows: raise it");
    }
  }
  CudaModelRunner* runner_ptr = runner->get();
  auto core = EngineCore::create(mc, config, [&](const KvCachePlan& plan) -> Result<std::unique_ptr<ModelRunner>> {
    if (Status s = runner_ptr->allocate_kv(plan); !s.ok()) return s;
    return std::unique_ptr<ModelRunner>(std::move(*runner));
  });
  if (!core.ok()) return core.status();
  if (config.tuning.cuda_warmup) {
    const auto w0 = std::chrono::steady_clock::now();
    if (Status s = runner_ptr->warm_up(); !s.ok()) return s;
    if (config.log_stats) {
      std::fprintf(stderr, "tessera: CUDA graphs captured for every decode batch size in %.2f s\n",
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count());
    }
  }
  if (config.log_stats) {
    std::fprintf(stderr, "tessera: CUDA device 0: %s, %d SMs, %zu MiB; weights %zu MiB (%s) copied in %.2f s\n",
                 prop.name, prop.multiProcessorCount, total_bytes >> 20, weight_bytes >> 20,
                 config.dtype == DType::kF16 ? "float16" : "bfloat16", load_s);
    if (offloaded_bytes > 0) {
      std::fprintf(stderr, "tessera: %zu MiB of weights in pinned host memory (cpu_offload_gb), read over PCIe every step\n",
                   offloaded_bytes >> 20);
    }
  }
  return core;
}

}  // namespace tessera::cuda
