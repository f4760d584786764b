// The fused decode GEMV kernels (see gemv.h), templated on the element type T (bf16 or
// f16) and their shape: gemv.cu instantiates the engine's shapes, bench/cuda the sweep of
// candidates.
//
// Work split. A CTA owns 16 weight rows (two groups of 8; gemv_silu_mul: 8 gate rows and the
// 8 up rows of the same outputs) over the whole of k, so every output is finished by one CTA
// and the epilogues need no atomics. Its W warps split k: warp w takes the 64-column steps
// w, w + W, w + 2W, ... (the warps of a CTA read adjacent 128-byte pieces of each row).
//
// Loads. In a step, lane (g = lane / 4, c = lane % 4) copies 16 bytes (8 columns) at column
// step * 64 + j * 32 + c * 8, j = 0, 1, of weight row g of each group: every warp
// instruction reads 8 rows x 64 contiguous bytes, the two of a step whole 128-byte lines.
// The copies are cp.async (L1 bypassed, L2 evict-first) into a per-warp ring of S stages
// of 2 KB; each lane reads back only the 16-byte slots it copied itself, so the ring needs
// no barrier and its shared-memory reads are conflict-free. Each warp keeps S - 1 steps
// (2 KB each) in flight: W * (S - 1) * 2 KB per CTA.
//
// Math. Per step and j, one mma.sync m16n8k16 (T in, fp32 accumulate) per row group and
// pair of columns: A = x (16 tokens x 16 columns; tokens 8..15 zero unless n > 8), B = the 8
// weight rows. A dot product is a sum over k, so any order of the columns works as long as
// A and B agree: lane c's 8 columns (4 T pairs p0..p3) fill k-slots {2c, 2c+1} with p0
// (or p2) and {2c+8, 2c+9} with p1 (or p3) of the first (second) MMA, in A and in B alike.
// The A fragment of lane (g, c) is then x[token g] and x[token g + 8] at the lane's own
// columns: one 16-byte load of x per token half, held in registers one step ahead (x is
// small and read through L1). Tensor cores make the arithmetic free for any n <= 16.
//
// Norm prologue. The same pass accumulates sum(x^2) per token in fp32 and feeds the MMA
// T(x * norm_w); the CTA reduction yields inv_rms, applied to the fp32 sums in the
// epilogue. No separate pass over x.
//
// Epilogue. Each warp leaves its C fragments (and partial sums of squares) in its own
// ring; after one barrier the CTA's threads sum them over the warps, one output element
// per thread, and store / add / silu-mul.
#pragma once

#include <algorithm>
#include <atomic>
#include <iterator>
#include <string>
#include <utility>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_device.cuh"
#include "backend/cuda/pdl.h"
#include "backend/cuda/tma_device.cuh"

namespace tessera::cuda {
// Internal linkage: each including source (the engine's, the bench's sweep) gets its own
// instances.
namespace {

using namespace gemv_detail;
using namespace tma;

// Register budget: 3 CTAs of 8 warps per SM (2 with 16 tokens), which the 64 KB of shared
// memory of the default shape allows too.
template <typename T, int W, int S, bool kNorm, bool kTok16, Epi E>
__global__ void __launch_bounds__(W * 32, (kTok16 ? 16 : 24) / W) gemv_kernel(const Params<T> p) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int g = lane >> 2, c = lane & 3;
  const int64_t k = p.k, m = p.m;
  pdl_launch_dependents();

  // This lane's weight rows; rows past the end repeat the last one (their outputs are
  // dropped), so every copy stays in bounds.
  const T* wrow[kGroups];
#pragma unroll
  for (int rg = 0; rg < kGroups; ++rg) {
    int64_t row;
    if constexpr (E == Epi::kSiluMul) {
      row = rg * m + min(static_cast<int64_t>(blockIdx.x) * 8 + g, m - 1);
    } else {
      row = min(static_cast<int64_t>(blockIdx.x) * 16 + rg * 8 + g, m - 1);
    }
    wrow[rg] = p.w + row * k + c * 8;
  }
  const int nsteps = static_cast<int>((k + kStepK - 1) / kStepK);
  const int my_steps = warp < nsteps ? (nsteps - 1 - warp) / W + 1 : 0;
  unsigned char* region = smem + warp * (S * kStageBytes);
  const uint32_t ring = static_cast<uint32_t>(__cvta_generic_to_shared(region)) + lane * 16;
  const uint64_t policy = evict_first_policy();

  // Step i of this warp into stage i % S (always one commit group, empty past the end).
  auto issue = [&](int i) {
    if (i < my_steps) {
      const int64_t k0 = static_cast<int64_t>(warp + i * W) * kStepK;
      const uint32_t dst = ring + (i % S) * kStageBytes;
#pragma unroll
      for (int rg = 0; rg < kGroups; ++rg) {
#pragma unroll
        for (int j = 0; j < kChunks; ++j) {
          const int64_t off = k0 + j * 32;
          const bool valid = off + c * 8 < k;
          cp_async16(dst + (rg * kChunks + j) * 512, wrow[rg] + (valid ? off : 0), valid ? 16 : 0, policy);
        }
      }
    }
    cp_async_commit();
  };
#pragma unroll
  for (int i = 0; i < S - 1; ++i) issue(i);

  // Everything below reads what earlier kernels wrote.
  pdl_wait();
  const XSource<T, kNorm, kTok16> xs(p, g, c);
  auto load_x = [&](int i, XStep& s) { xs.load(static_cast<int64_t>(warp + i * W) * kStepK, s); };

  float acc[kGroups][4] = {};
  float ss[2] = {0.0f, 0.0f};
  XStep cur{}, next{};
  if (my_steps > 0) load_x(0, cur);
  for (int i = 0; i < my_steps; ++i) {
    issue(i + S - 1);
    if (i + 1 < my_steps) load_x(i + 1, next);
    cp_async_wait<S - 1>();  // step i has landed
    const uint32_t src = ring + (i % S) * kStageBytes;
    uint4 wv[kGroups][kChunks];
#pragma unroll
    for (int rg = 0; rg < kGroups; ++rg) {
#pragma unroll
      for (int j = 0; j < kChunks; ++j) wv[rg][j] = lds128(src + (rg * kChunks + j) * 512);
    }
    mma_step<T, kNorm, kTok16>(acc, ss, cur, wv);
    cur = next;
  }


  // Each warp's partial sums into its own ring (its copies have all landed), then the CTA's
  // threads sum over the warps. C fragment element q of lane (g, c): token g + 8 * (q / 2),
  // row 2c + q % 2 of the group.
  cp_async_wait<0>();
  __syncwarp();
  store_partials<kNorm, kTok16>(reinterpret_cast<float*>(region), acc, ss, lane);
  __syncthreads();
  write_outputs<T, W, kNorm, kTok16, E>(p, reinterpret_cast<const float*>(smem), S * kStageBytes / 4,
                                     static_cast<int64_t>(blockIdx.x), static_cast<int>(threadIdx.x));
}

// ---- Bulk-copy GEMV (GemvVariant::bulk) ----
//
// One CTA per SM (two with a short ring), each owning a contiguous range of tiles of R weight
// rows (gemv_silu_mul: R / 2 gate rows and their up rows) over the whole of k. The variants
// use R = 16; 32, 64 and 128 were dropped as slower (and 128 gave rare wrong sums at 16
// tokens, cause not found). A producer thread streams each tile in chunks of CB = 128 / R
// blocks of 64 columns through the tensor copy engine: per stage one 16-KB box of a 3-D view
// of W (64 columns x CB column blocks x R rows; gemv_silu_mul: two boxes of R / 2 rows, gate
// and up) into a ring of S stages, each completed on an mbarrier by its bytes; columns and
// rows past the end arrive as zeros. 8 consumer warps do the math of the cp.async kernel,
// warp w on the 16-row sub-tile w / CB and column block w % CB of every chunk, and free a
// stage with an arrival on its "empty" mbarrier.
// The ring keeps up to S x 16 KB per SM in flight however the tiles end, so the weight
// stream does not pause at tile boundaries nor ramp up per CTA. After a tile's last chunk
// the consumers leave their partial sums in one of two reduction buffers, meet at a named
// barrier and write the tile's outputs while the producer streams the next tiles.
// Needs k % 64 == 0 (other widths run variant 0).
constexpr int kBulkConsumers = 8;                     // consumer warps
constexpr int kBulkStageBytes = 16 * 1024;            // one box: R rows x (128 / R) column blocks of 64
constexpr int kBulkRedFloats = kGroups * 4 * 32 + 16;  // one warp's partials of a sub-tile

__device__ __forceinline__ void consumers_sync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(kBulkConsumers * 32) : "memory");
}

// Shared memory of the bulk kernel with an S-stage ring, and its CTAs per SM (as many as fit,
// at most 2).
constexpr int bulk_smem(int stages) {
  return stages * kBulkStageBytes + 2 * kBulkConsumers * kBulkRedFloats * 4 + 2 * stages * 8;
}
constexpr int bulk_ctas_per_sm(int stages) { return bulk_smem(stages) * 2 + 2048 <= 228 * 1024 ? 2 : 1; }

template <typename T, int S, int R, bool kNorm, bool kTok16, Epi E>
__global__ void __launch_bounds__((kBulkConsumers + 1) * 32, bulk_ctas_per_sm(S))
    gemv_bulk_kernel(const Params<T> p, const __grid_constant__ CUtensorMap wmap) {
  constexpr int kCb = 128 / R;              // column blocks per stage
  constexpr int kChunkCols = kCb * 64;      // columns per stage
  constexpr int kRowBytes = kCb * 128;      // a row's bytes in a stage
  constexpr int kSubTiles = R / 16;         // 16-row sub-tiles per tile, kCb warps each
  static_assert(R * kRowBytes == kBulkStageBytes && kSubTiles * kCb == kBulkConsumers);
  extern __shared__ __align__(128) unsigned char smem[];
  float* red = reinterpret_cast<float*>(smem + S * kBulkStageBytes);  // [2][consumers][kBulkRedFloats]
  const uint32_t stages = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t full = static_cast<uint32_t>(__cvta_generic_to_shared(red + 2 * kBulkConsumers * kBulkRedFloats));
  const uint32_t empty = full + S * 8;  // S 8-byte barriers each
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int64_t k = p.k, m = p.m;
  constexpr int kTileRows = E == Epi::kSiluMul ? R / 2 : R;  // output rows per tile
  const int64_t tiles = (m + kTileRows - 1) / kTileRows;
  const int64_t t0 = tiles * blockIdx.x / gridDim.x, t1 = tiles * (blockIdx.x + 1) / gridDim.x;
  const int chunks = static_cast<int>((k + kChunkCols - 1) / kChunkCols);
  const int64_t total = (t1 - t0) * chunks;  // stages this CTA streams
  if (threadIdx.x == 0) {
    for (int i = 0; i < S; ++i) {
      mbar_init(full + 8 * i, 1);
      mbar_init(empty + 8 * i, kBulkConsumers);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  pdl_launch_dependents();

  if (warp == kBulkConsumers) {
    // Producer: weights only (constant), so it starts before the previous kernel ends.
    if (lane == 0) {
      const uint64_t policy = evict_first_policy();
      // Counters, not divisions: stage s of the ring in phase `phase`, chunk of tile.
      int s = 0, chunk = 0;
      uint32_t phase = 0;
      int64_t tile = t0;
      for (int64_t i = 0; i < total; ++i) {
        if (i >= S) mbar_wait(empty + 8 * s, phase ^ 1u);
        const int block = chunk * kCb;
        const uint32_t dst = stages + s * kBulkStageBytes;
        mbar_arrive_expect_tx(full + 8 * s, kBulkStageBytes);
        if constexpr (E == Epi::kSiluMul) {  // R / 2 gate rows, then their up rows
          tensor_copy(dst, wmap, 0, block, static_cast<int>(tile * (R / 2)), full + 8 * s, policy);
          tensor_copy(dst + (R / 2) * kRowBytes, wmap, 0, block, static_cast<int>(m + tile * (R / 2)), full + 8 * s,
                      policy);
        } else {
          tensor_copy(dst, wmap, 0, block, static_cast<int>(tile * R), full + 8 * s, policy);
        }
        if (++chunk == chunks) {
          chunk = 0;
          ++tile;
        }
        if (++s == S) {
          s = 0;
          phase ^= 1u;
        }
      }
    }
    return;
  }

  // Consumers. Everything below reads what earlier kernels wrote.
  pdl_wait();
  const int g = lane >> 2, c = lane & 3;
  // Up to 8 tokens, lanes of odd g read their two pieces in the order 1, 0 (mma_step_dual);
  // 16 tokens need both token halves of the MMAs, so the lanes read in order (2-way conflicts).
  constexpr bool kDual = !kTok16;
  const int flip = kDual ? g & 1 : 0;
  const XSource<T, kNorm, kTok16> xs(p, g, c);
  const int sub_tile = warp / kCb, col_block = warp % kCb;
  auto load_x = [&](int chunk, XStep& st) { xs.load_block(chunk * kChunkCols + col_block * kStepK, st); };
  // This lane's 16 bytes of a stage: row g of each group of its sub-tile (gemv_silu_mul:
  // gate rows in the first half of the box, up rows in the second), columns
  // 64 col_block + 32 j + 8 c. Rows lie a multiple of 128 bytes apart, so lanes of one g
  // parity read piece j first and the others piece 1 - j: the 8 lanes of a 16-byte access
  // phase (g = 2h, 2h + 1) then hit all 32 banks once.
  const uint32_t lane_at = stages + g * kRowBytes + (col_block * kStepK + c * 8) * 2 + flip * 64;
  constexpr bool kSilu = E == Epi::kSiluMul;
  const int group_row[kGroups] = {kSilu ? sub_tile * 8 : sub_tile * 16, kSilu ? R / 2 + sub_tile * 8 : sub_tile * 16 + 8};
  const uint32_t group_at[kGroups] = {lane_at + group_row[0] * kRowBytes, lane_at + group_row[1] * kRowBytes};

  float acc[2][kGroups][4] = {};  // [piece slot] with kDual, else [0] only
  float ss[2] = {0.0f, 0.0f};
  XStep cur{}, next{};
  if (total > 0) load_x(0, cur);
  // Counters, not divisions (the loop's integer work competes with the MMAs for issue slots).
  int s = 0, chunk = 0;
  uint32_t phase = 0, stage_off = 0;  // stage_off = s * kBulkStageBytes
  int64_t tile = t0;
  // Stage i; squares: sum x^2 too (the first tile only: every tile of a CTA sees the same x).
  auto step = [&](int64_t i, bool squares) {
    const int next_chunk = chunk + 1 == chunks ? 0 : chunk + 1;
    if (i + 1 < total) load_x(next_chunk, next);
    mbar_wait(full + 8 * s, phase);
    uint4 wv[kGroups][kChunks];
#pragma unroll
    for (int rg = 0; rg < kGroups; ++rg) {
      const uint32_t at = group_at[rg] + stage_off;
      wv[rg][0] = lds128(at);       // piece flip
      wv[rg][1] = lds128(at ^ 64);  // piece 1 - flip (mma_step_dual sorts the sums out)
    }
    // The arrival releases the warp's shared loads above (ordered before it by __syncwarp).
    __syncwarp();
    if (lane == 0) mbar_arrive(empty + 8 * s);
    if constexpr (kDual) {
      mma_step_dual<T, kNorm>(acc, ss[0], cur, wv, squares);
    } else {
      mma_step<T, kNorm, kTok16>(acc[0], ss, cur, wv, squares);
    }
    cur = next;
    if (chunk == chunks - 1) {
      float* buf = red + (tile & 1) * (kBulkConsumers * kBulkRedFloats);
      float tile_ss[2] = {ss[0], ss[1]};  // store_partials reduces its copy in place
      if constexpr (kDual) {
        float sums[kGroups][4];
        dual_result(acc, sums);
        store_partials<kNorm, kTok16>(buf + warp * kBulkRedFloats, sums, tile_ss, lane);
      } else {
        store_partials<kNorm, kTok16>(buf + warp * kBulkRedFloats, acc[0], tile_ss, lane);
      }
      consumers_sync();
      // Sub-tile q's outputs (16 rows; gemv_silu_mul: 8) by the threads of its kCb warps.
      write_outputs<T, kCb, kNorm, kTok16, E>(p, buf + sub_tile * kCb * kBulkRedFloats, kBulkRedFloats,
                                              tile * kSubTiles + sub_tile,
                                              static_cast<int>(threadIdx.x) - sub_tile * kCb * 32);
#pragma unroll
      for (int j = 0; j < 2; ++j) {
#pragma unroll
        for (int rg = 0; rg < kGroups; ++rg) {
#pragma unroll
          for (int q = 0; q < 4; ++q) acc[j][rg][q] = 0.0f;
        }
      }
      ++tile;
    }
    chunk = next_chunk;
    stage_off += kBulkStageBytes;
    if (++s == S) {
      s = 0;
      stage_off = 0;
      phase ^= 1u;
    }
  };
  const int64_t first_tile = total < chunks ? total : chunks;
  int64_t i = 0;
  for (; i < first_tile; ++i) step(i, true);
  // Unrolled twice, cur and next swap without moves (16 tokens and gemv_silu_mul, with its
  // two accumulator sets of mma_step_dual: no registers to spare, the unrolled loop spills).
#pragma unroll(kTok16 || E == Epi::kSiluMul ? 1 : 2)
  for (; i < total; ++i) step(i, false);
}

// W [rows, k] (k % 64 == 0) as the 3-D tensor (64 columns, k / 64 column blocks, rows) with
// boxes of 64 x box_blocks x box_rows: a box lands as box_rows row segments of
// 128 x box_blocks bytes. L2 promotion 128 B: with 256 B the same ring streamed 4.00 instead
// of 4.40 TB/s (28672 x 4096) and 4.20 instead of 4.63 (128256 x 4096) on the H200
// (bench_stream; no promotion equals 128 B). The element type is T's (the copies move bytes
// either way).
template <typename T>
bool weight_tensor_map(const T* w, int64_t rows, int64_t k, int box_blocks, int box_rows, CUtensorMap* map) {
  static_assert(sizeof(T) == 2, "16-bit elements: 64 columns are 128 bytes");
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[3] = {64, static_cast<cuuint64_t>(k / 64), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[2] = {128, static_cast<cuuint64_t>(k) * 2};  // bytes, of dims 1 and 2
  const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(box_blocks), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  constexpr CUtensorMapDataType kType =
      ElemTraits<T>::kIsHalf ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return encode(map, kType, 3, const_cast<T*>(w), dims, strides, box, element_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Multiprocessors of the current device (cached per device).
int sm_count() {
  static std::atomic<int> counts[64] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 1;
  std::atomic<int>& cached = counts[device & 63];
  int n = cached.load(std::memory_order_relaxed);
  if (n == 0) {
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || n <= 0) n = 1;
    cached.store(n, std::memory_order_relaxed);
  }
  return n;
}

// Lets kernel use smem bytes of dynamic shared memory (past 48 KB it must opt in), once per
// device; done is the kernel's own record of the devices done.
template <typename... Args>
cudaError_t allow_smem(void (*kernel)(Args...), int smem, std::atomic<uint64_t>& done) {
  if (smem <= 48 * 1024) return cudaSuccess;
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  const uint64_t bit = uint64_t{1} << (device & 63);
  if ((done.load(std::memory_order_acquire) & bit) != 0) return cudaSuccess;
  if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
      e != cudaSuccess) {
    return e;
  }
  done.fetch_or(bit, std::memory_order_acq_rel);
  return cudaSuccess;
}

// The kernel of a variant: W warps x S stages of cp.async (a CTA per 16-row tile) or, with
// Bulk, the bulk-copy kernel with an S-stage ring and R-row tiles (CTAs persistent, as many
// as fit on the SMs).
template <typename T, int W, int S, bool Bulk, int R, bool kNorm, bool kTok16, Epi E>
cudaError_t launch(const Params<T>& p, bool pdl, cudaStream_t stream) {
  static std::atomic<uint64_t> done{0};
  constexpr bool kSilu = E == Epi::kSiluMul;
  if constexpr (Bulk) {
    auto* kernel = &gemv_bulk_kernel<T, S, R, kNorm, kTok16, E>;
    constexpr int kSmem = bulk_smem(S);
    static_assert(kSmem <= 227 * 1024, "the ring must fit an SM's shared memory");
    CUtensorMap map;
    if (!weight_tensor_map(p.w, kSilu ? 2 * p.m : p.m, p.k, 128 / R, kSilu ? R / 2 : R, &map)) {
      return cudaErrorInvalidValue;
    }
    if (cudaError_t e = allow_smem(kernel, kSmem, done); e != cudaSuccess) return e;
    const int64_t tile_rows = kSilu ? R / 2 : R, tiles = (p.m + tile_rows - 1) / tile_rows;
    // As many CTAs as the SMs hold, or fewer where that evens out their tiles: with at most
    // q tiles per CTA, ceil(tiles / q) CTAs take q or q - 1 each, so the last tiles of the
    // stream do not run on a part of the SMs alone (gate/up of the 8B shape: 3,584 tiles,
    // 256 CTAs of 14 instead of 264 of 13 or 14).
    const int64_t slots = int64_t{bulk_ctas_per_sm(S)} * sm_count();
    const int64_t per_cta = (tiles + slots - 1) / slots;
    const int64_t ctas = (tiles + per_cta - 1) / per_cta;
    return launch_pdl(kernel, dim3(static_cast<unsigned>(ctas)), dim3((kBulkConsumers + 1) * 32), kSmem, stream, pdl,
                      p, map);
  } else {
    auto* kernel = &gemv_kernel<T, W, S, kNorm, kTok16, E>;
    constexpr int kSmem = W * S * kStageBytes;
    if (cudaError_t e = allow_smem(kernel, kSmem, done); e != cudaSuccess) return e;
    const int64_t tiles = kSilu ? (p.m + 7) / 8 : (p.m + 15) / 16;
    return launch_pdl(kernel, dim3(static_cast<unsigned>(tiles)), dim3(W * 32), kSmem, stream, pdl, p);
  }
}

template <int W, int S, bool Bulk, int R, Epi E, typename T>
cudaError_t dispatch(const Params<T>& p, bool pdl, cudaStream_t stream) {
  const bool norm = p.norm != nullptr, tok16 = p.n > 8;
  if (norm) {
    return tok16 ? launch<T, W, S, Bulk, R, true, true, E>(p, pdl, stream)
                 : launch<T, W, S, Bulk, R, true, false, E>(p, pdl, stream);
  }
  return tok16 ? launch<T, W, S, Bulk, R, false, true, E>(p, pdl, stream)
               : launch<T, W, S, Bulk, R, false, false, E>(p, pdl, stream);
}

// Variant v's kernel of the table kVariants (v < its size).
template <const auto& kVariants, Epi E, typename T, size_t... I>
cudaError_t dispatch_variant(int v, const Params<T>& p, bool pdl, cudaStream_t stream, std::index_sequence<I...>) {
  cudaError_t e = cudaErrorInvalidValue;
  ((v == static_cast<int>(I)
        ? (e = dispatch<kVariants[I].warps, kVariants[I].stages, kVariants[I].bulk, kVariants[I].tile_rows, E>(
               p, pdl, stream),
           true)
        : false) ||
   ...);
  return e;
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// One GEMV as variant opt.variant of the table kVariants (its bulk shapes fall back to
// variant 0, which must not be bulk, where the tensor map cannot read W).
template <const auto& kVariants, Epi E, typename T>
std::string run(const char* name, const GemvInput<T>& in, const T* w, int64_t n, int64_t k, int64_t m, void* out,
                cudaStream_t stream, const GemvOptions& opt) {
  constexpr int kNumVariants = static_cast<int>(std::size(kVariants));
  static_assert(!kVariants[0].bulk, "variant 0 is the fallback of the bulk ones");
  if (n == 0 || m == 0) return "";
  if (!gemv_supported(n, k)) {
    return std::string(name) + ": needs 1 <= n <= 16 and k a positive multiple of 8 (n " + std::to_string(n) + ", k " +
           std::to_string(k) + ")";
  }
  if (!aligned16(in.x) || !aligned16(w) || (in.norm != nullptr && !aligned16(in.norm))) {
    return std::string(name) + ": x, w and norm must be 16-byte aligned";
  }
  if (opt.variant < 0 || opt.variant >= kNumVariants) return std::string(name) + ": no such variant";
  const Params<T> p{in.x, in.rows, in.norm, in.eps, w, static_cast<int>(n), k, m, out};
  // The bulk kernels read W through a tensor map of 64-column blocks.
  const bool bulk_ok = k % 64 == 0 && tensor_map_encoder() != nullptr;
  const int variant = kVariants[opt.variant].bulk && !bulk_ok ? 0 : opt.variant;
  const cudaError_t e =
      dispatch_variant<kVariants, E>(variant, p, opt.pdl, stream, std::make_index_sequence<kNumVariants>());
  return e == cudaSuccess ? "" : std::string(name) + ": " + cudaGetErrorString(e);
}

}  // namespace
}  // namespace tessera::cuda
