// Helpers of the CUDA benchmarks (bench/cuda): exit on error, random device data, and time
// per call from CUDA graph replays (as the engine runs decode steps).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace tessera::bench {

inline void check(const std::string& err, const char* what) {
  if (!err.empty()) {
    std::fprintf(stderr, "bench: %s: %s\n", what, err.c_str());
    std::exit(1);
  }
}

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) check(std::string(cudaGetErrorString(e)), what);
}

// n bf16 values N(0, scale), a random tile of up to 16M values repeated (speed does not
// depend on the values).
inline __nv_bfloat16* device_random(size_t n, std::mt19937& rng, float scale) {
  const size_t tile = std::min<size_t>(n, size_t{1} << 24);
  std::vector<__nv_bfloat16> h(tile);
  std::normal_distribution<float> d(0.0f, scale);
  for (auto& x : h) x = static_cast<__nv_bfloat16>(d(rng));
  __nv_bfloat16* p = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(n, 1) * sizeof(__nv_bfloat16)), "cudaMalloc");
  for (size_t i = 0; i < n; i += tile) {
    check(cudaMemcpy(p + i, h.data(), std::min(tile, n - i) * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice),
          "upload");
  }
  return p;
}

// A device copy of v.
template <typename T>
T* device_copy(const std::vector<T>& v) {
  T* p = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(v.size(), 1) * sizeof(T)), "cudaMalloc");
  check(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  return p;
}

// Milliseconds per call of fn(i), i = 0 .. iters - 1, captured into one CUDA graph and
// replayed (after an eager warm-up: cuBLASLt plans, kernel attributes).
inline double graph_ms(cudaStream_t stream, int iters, const std::function<void(int)>& fn, int replays = 10) {
  for (int i = 0; i < iters; ++i) fn(i);
  check(cudaStreamSynchronize(stream), "warm-up");
  cudaGraph_t graph;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "capture");
  for (int i = 0; i < iters; ++i) fn(i);
  check(cudaStreamEndCapture(stream, &graph), "capture");
  cudaGraphExec_t exec;
  check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  check(cudaGraphLaunch(exec, stream), "replay");
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a, stream);
  for (int r = 0; r < replays; ++r) cudaGraphLaunch(exec, stream);
  cudaEventRecord(b, stream);
  check(cudaEventSynchronize(b), "replay");
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return ms / (static_cast<double>(replays) * iters);
}

}  // namespace tessera::bench
