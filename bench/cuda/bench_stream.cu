// How fast the H200 streams a weight matrix into the SMs, with no math: the ceiling the decode
// GEMVs (src/backend/cuda/gemv.cu) chase, per way of reading.
//   ldg        plain 16-byte loads, 8 in flight per thread, a grid-stride loop
//   tma ...    the bulk GEMV's producer alone: persistent CTAs, each owning a contiguous range
//              of R-row tiles, stream them in boxes of 64 columns x CB column blocks x R rows
//              (the 3-D view gemv.cu uses) into a ring of S stages; one consumer warp frees a
//              stage as soon as it lands (reads one word of it). Options: CTAs per SM, L2
//              evict-first hint, L2 promotion, two half boxes per stage (gate and up rows,
//              as gemv_silu_mul).
// Prints GB/s per configuration for the gate/up (28672 x 4096) and LM-head (128256 x 4096)
// weight shapes. Run on the GPU machine: `bench_stream`.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "backend/cuda/tma_device.cuh"
#include "bench_util.h"

namespace {

using namespace tessera::cuda::tma;  // mbarriers, tensor_copy, tensor_map_encoder
using tessera::bench::check;
using tessera::bench::graph_ms;

__global__ void ldg_kernel(const uint4* __restrict__ w, int64_t n16, unsigned* sink) {
  constexpr int kBatch = 8;
  unsigned acc = 0;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n16; i += kBatch * stride) {
    uint4 v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) v[u] = i + u * stride < n16 ? __ldcs(w + i + u * stride) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < kBatch; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x12345678u) *sink = acc;  // keeps the loads
}

struct StreamParams {
  int64_t rows, k;
  int cb, r;       // box: 64 columns x cb column blocks x r rows
  int stages;
  bool halves;     // two boxes of r / 2 rows per stage: rows t * r/2 and rows / 2 + t * r/2
  bool evict_first;
  unsigned* sink;
};

__global__ void tma_kernel(const StreamParams p, const __grid_constant__ CUtensorMap map) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int stage_bytes = 128 * p.cb * p.r;
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem + p.stages * stage_bytes);
  const uint32_t ring = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t full = static_cast<uint32_t>(__cvta_generic_to_shared(bars));
  const uint32_t empty = full + 8 * p.stages;
  const int64_t tile_rows = p.halves ? p.r / 2 : p.r;
  const int64_t tiles = (p.halves ? p.rows / 2 : p.rows) / tile_rows;
  const int64_t t0 = tiles * blockIdx.x / gridDim.x, t1 = tiles * (blockIdx.x + 1) / gridDim.x;
  const int chunks = static_cast<int>(p.k / 64 / p.cb);
  const int64_t total = (t1 - t0) * chunks;
  if (threadIdx.x == 0) {
    for (int i = 0; i < p.stages; ++i) mbar_init(full + 8 * i, 1), mbar_init(empty + 8 * i, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 32) {  // producer
    uint64_t policy = 0;
    if (p.evict_first) {
      asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
    } else {
      asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(policy));
    }
    int s = 0, chunk = 0;
    uint32_t phase = 0;
    int64_t tile = t0;
    for (int64_t i = 0; i < total; ++i) {
      if (i >= p.stages) mbar_wait(empty + 8 * s, phase ^ 1u);
      const uint32_t dst = ring + s * stage_bytes;
      mbar_arrive_expect_tx(full + 8 * s, stage_bytes);
      const int nboxes = p.halves ? 2 : 1;
      for (int b = 0; b < nboxes; ++b) {
        const int row = static_cast<int>(b * (p.rows / 2) + tile * tile_rows);
        tensor_copy(dst + b * (stage_bytes / nboxes), map, 0, chunk * p.cb, row, full + 8 * s, policy);
      }
      if (++chunk == chunks) chunk = 0, ++tile;
      if (++s == p.stages) s = 0, phase ^= 1u;
    }
  } else if (threadIdx.x < 32) {  // consumer warp
    unsigned acc = 0;
    int s = 0;
    uint32_t phase = 0;
    for (int64_t i = 0; i < total; ++i) {
      mbar_wait(full + 8 * s, phase);
      acc ^= reinterpret_cast<const unsigned*>(smem + s * stage_bytes)[threadIdx.x];
      __syncwarp();
      if (threadIdx.x == 0) mbar_arrive(empty + 8 * s);
      if (++s == p.stages) s = 0, phase ^= 1u;
    }
    if (acc == 0x12345678u) *p.sink = acc;
  }
}

struct Config {
  const char* name;
  int cb, r, stages, ctas_per_sm;
  bool halves, evict_first;
  CUtensorMapL2promotion promotion;
};

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench_stream: no CUDA device\n");
    return 1;
  }
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "attribute");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "stream");
  unsigned* sink = nullptr;
  check(cudaMalloc(&sink, sizeof(unsigned)), "malloc");
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tessera::cuda::tma::tensor_map_encoder();
  if (encode == nullptr) {
    std::fprintf(stderr, "bench_stream: no cuTensorMapEncodeTiled\n");
    return 1;
  }
  const std::vector<Config> configs = {
      {"tma 8 blocks x 16 rows, 4 stages, 2/SM (gemv v5)", 8, 16, 4, 2, false, true, CU_TENSOR_MAP_L2_PROMOTION_L2_256B},
      {"  same, two 8-row halves (gate/up)", 8, 16, 4, 2, true, true, CU_TENSOR_MAP_L2_PROMOTION_L2_256B},
      {"  same, no evict-first", 8, 16, 4, 2, false, false, CU_TENSOR_MAP_L2_PROMOTION_L2_256B},
      {"  same, L2 promotion none", 8, 16, 4, 2, false, true, CU_TENSOR_MAP_L2_PROMOTION_NONE},
      {"  same, L2 promotion 128B", 8, 16, 4, 2, false, true, CU_TENSOR_MAP_L2_PROMOTION_L2_128B},
      {"  same, 8 stages, 1/SM", 8, 16, 8, 1, false, true, CU_TENSOR_MAP_L2_PROMOTION_L2_256B},
      {"  same, 6 stages, 2/SM", 8, 16, 6, 2, false, true, CU_TENSOR_MAP_L2_PROMOTION_L2_256B},
      {"  same, 12 stages, 1/SM", 8, 16, 12, 1, false, true, CU_TENSOR_MAP_L2_PROMOTION_L2_256B},
      {"  same, 3 stages, 3/SM", 8, 16, 3, 3, false, true, CU_TENSOR_MAP_L2_PROMOTION_L2_256B},
      {"tma 1 block x 128 rows, 4 stages, 2/SM", 1, 128, 4, 2, false, true, CU_TENSOR_MAP_L2_PROMOTION_L2_256B},
      {"tma 2 blocks x 64 rows, 4 stages, 2/SM", 2, 64, 4, 2, false, true, CU_TENSOR_MAP_L2_PROMOTION_L2_256B},
      {"tma 4 blocks x 32 rows, 4 stages, 2/SM", 4, 32, 4, 2, false, true, CU_TENSOR_MAP_L2_PROMOTION_L2_256B},
      {"tma 16 blocks x 8 rows, 4 stages, 2/SM", 16, 8, 4, 2, false, true, CU_TENSOR_MAP_L2_PROMOTION_L2_256B},
      {"tma 8 blocks x 32 rows (32 KB), 3 stages, 2/SM", 8, 32, 3, 2, false, true, CU_TENSOR_MAP_L2_PROMOTION_L2_256B},
      {"tma 8 blocks x 8 rows (8 KB), 8 stages, 2/SM", 8, 8, 8, 2, false, true, CU_TENSOR_MAP_L2_PROMOTION_L2_256B},
  };
  std::printf("weight streaming, GB/s (%d SMs)\n", sms);
  for (const int64_t rows : {int64_t{28672}, int64_t{128256}}) {
    const int64_t k = 4096;
    const size_t bytes = static_cast<size_t>(rows * k * 2);
    __nv_bfloat16* w = nullptr;
    check(cudaMalloc(&w, bytes), "malloc");
    check(cudaMemset(w, 1, bytes), "memset");
    std::printf("%lld x %lld (%.0f MB)\n", static_cast<long long>(rows), static_cast<long long>(k), bytes / 1e6);
    for (int per_sm : {1, 2, 4}) {
      const double ms = graph_ms(stream, 1, [&](int) {
        ldg_kernel<<<sms * per_sm, 1024 / per_sm, 0, stream>>>(reinterpret_cast<const uint4*>(w),
                                                                  static_cast<int64_t>(bytes / 16), sink);
      }, 20);
      std::printf("  %-52s %7.1f us %6.0f\n", per_sm == 1   ? "ldg, 1 CTA x 1024 threads per SM"
                                              : per_sm == 2 ? "ldg, 2 CTAs x 512 threads per SM"
                                                            : "ldg, 4 CTAs x 256 threads per SM",
                  ms * 1e3, bytes / ms / 1e6);
    }
    for (const Config& c : configs) {
      CUtensorMap map;
      const int box_rows = c.halves ? c.r / 2 : c.r;
      const cuuint64_t dims[3] = {64, static_cast<cuuint64_t>(k / 64), static_cast<cuuint64_t>(rows)};
      const cuuint64_t strides[2] = {128, static_cast<cuuint64_t>(k) * 2};
      const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(c.cb), static_cast<cuuint32_t>(box_rows)};
      const cuuint32_t element_strides[3] = {1, 1, 1};
      if (encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, w, dims, strides, box, element_strides,
                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, c.promotion,
                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        std::printf("  %-52s (no tensor map)\n", c.name);
        continue;
      }
      StreamParams p{rows, k, c.cb, c.r, c.stages, c.halves, c.evict_first, sink};
      const int smem = c.stages * 128 * c.cb * c.r + 16 * c.stages;
      check(cudaFuncSetAttribute(tma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "smem");
      const double ms =
          graph_ms(stream, 1, [&](int) { tma_kernel<<<sms * c.ctas_per_sm, 64, smem, stream>>>(p, map); }, 20);
      check(cudaGetLastError(), c.name);
      std::printf("  %-52s %7.1f us %6.0f\n", c.name, ms * 1e3, bytes / ms / 1e6);
    }
    check(cudaFree(w), "free");
  }
  return 0;
}
