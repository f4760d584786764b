// The tiled prefill half of paged attention (FlashAttention-2 style, mma.sync on 16-bit T ->
// fp32, T bf16 or fp16 as in attention.cu): runs of prefill tokens of one sequence take a CTA
// per (tile of query tokens, KV head), so each K/V row of the paged cache is read once per
// tile instead of once per token. The host plans the tiles once per step (plan_attention
// below); attention.cu launches this kernel for them and its split-KV kernel for the step's
// other tokens.
//
// A CTA holds ROWS = 128 (or 64) query rows: the G query heads of one GQA group for ROWS / G
// consecutive tokens, row r = token r / G, head r % G (G = 3: 42 tokens, 126 rows), so every
// row reads the same K/V. 4 warps of MT = 2 (or 1) 16-row m-tiles each (FlashAttention-2's
// layout: each K/V fragment feeds MT mmas), two CTAs per SM (their barriers and softmax phases
// interleave). Keys in tiles of 32 (64 at MT = 1), copied from the paged cache into shared
// memory with cp.async, two stages (one computed, one loading), one __syncthreads per tile;
// the cache slots of a tile are looked up (block table) a tile ahead, into shared memory, so
// no warp waits on a block id before issuing its copies. Per warp and key tile, with
// x = scale * log2(e) * q . k:
//   S [16 MT rows x keys] = Q K^T: Q's A fragments in registers at MT = 1, else ldmatrix from
//     the Q tile per key tile; K's B fragments from ldmatrix on the [key][dim] tile.
//   Causal and window mask per (row position, key): key in [first(pos), pos]; only tiles on
//     the diagonal or the window's edge pay for it; a warp skips tiles none of its rows see.
//   Online softmax in fp32 (base 2): m_new = max(m, max_j x_j), a = 2^(m - m_new),
//     l = l a + sum_j p_j, O = O a + P V, p_j = 2^(x_j - m_new); out = O / l at the end.
//   O [16 rows x D] += P V: P's A fragments are S's C fragments packed to T pairs; V's B
//     fragments come from ldmatrix.trans on the [key][dim] tile.
// P in bf16 rounds each weight by up to 2^-8 relative (fp16: 2^-11); over many keys the
// errors average out (random N(0, 1) data: out within ~8e-4 of fp32 at 128 .. 256 keys, ~5e-4
// beyond), but a row that sees few keys shows them (bf16: up to ~2.5e-3 below 16 keys, past
// the tests' 2e-3), so warps whose first row sees fewer than 128 keys add a second mma with
// P's rounding error (bf16: P to 2^-16, as the split-KV kernel does): the first 128 positions
// of a prompt, or every row under a window below 128.
// Shared rows are padded by 16 bytes: ldmatrix and cp.async are conflict-free.
// head_dim 64 and 128; other head dims take the split-KV kernel.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/cuda/attention_internal.h"
#include "backend/cuda/elem.cuh"
#include "common/check.h"

namespace tessera::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kStages = 2;        // K/V tiles in shared memory: one computed, one loading
constexpr int kExactBelow = 128;  // a warp whose rows see fewer keys than this splits P in two
constexpr int kMinRunTokens = 16; // shorter runs take the split-KV kernel token by token
constexpr float kLog2e = 1.4426950408889634f;

// Keys per K/V tile: 64, or 32 with two m-tiles per warp (S's registers).
template <int MT>
constexpr int kKeysOf = MT == 1 ? 64 : 32;

// Q rows, K and V stages, the stages' cache slots; MT m-tiles of 16 rows per warp.
template <typename T, int D, int MT>
constexpr size_t smem_bytes() {
  constexpr int kKeys = kKeysOf<MT>;
  return size_t{16 * kWarps * MT + 2 * kStages * kKeys} * (D + 8) * sizeof(T) + kStages * kKeys * sizeof(int32_t);
}

template <typename T>
struct Params {
  const T* q;
  const T* k_cache;
  const T* v_cache;
  const int32_t* positions;
  const int32_t* token_seq;
  const int32_t* indptr;
  const int32_t* block_ids;
  const int32_t* tiles;  // [num_tiles][2]: first token, number of tokens
  int num_heads, num_kv_heads, group;
  int block_size, block_shift;  // block_shift: log2(block_size), or -1 when not a power of two
  int sliding_window;
  float scale_log2;  // scale * log2(e)
  T* out;
};

// PTX wrappers.
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, or 16 zero bytes when !valid (src is not read then).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Four 8x8 matrices of 16-bit elements; lane l gives the address of row l % 8 of matrix l / 8.
template <typename T>
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const T* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

template <typename T>
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const T* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

template <typename T>
__device__ __forceinline__ void mma_k16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  mma_m16n8k16<T>(c, a[0], a[1], a[2], a[3], b0, b1);
}

__device__ __forceinline__ float exp2_approx(float x) {  // 2^-inf = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// End of the PTX wrappers.
// The rounding error of packed = pack_f32x2<T>(lo, hi), as a T pair.
template <typename T>
__device__ __forceinline__ uint32_t pack_error(float lo, float hi, uint32_t packed) {
  if constexpr (ElemTraits<T>::kIsHalf) {
    const float2 r = to_f32x2(*reinterpret_cast<const elem_x2<T>*>(&packed));
    return pack_f32x2<T>(lo - r.x, hi - r.y);
  } else {  // a bf16 is the top half of its fp32
    const float lo_r = __uint_as_float(packed << 16), hi_r = __uint_as_float(packed & 0xffff0000u);
    return pack_f32x2<T>(lo - lo_r, hi - hi_r);
  }
}

template <typename T, int D, int MT>
__global__ void __launch_bounds__(kThreads, D == 64 && MT == 1 ? 3 : 2) prefill_kernel(const Params<T> p) {
  constexpr int kKeys = kKeysOf<MT>;
  constexpr int ROWS = 16 * kWarps * MT;  // query rows per CTA
  constexpr int WR = 16 * MT;             // rows per warp
  constexpr bool kQInRegs = MT == 1;      // else Q's A fragments come from shared memory per tile
  constexpr int DP = D + 8;               // padded shared row (T)
  constexpr int CH = D / 8;               // 16-byte chunks per row
  constexpr int NK = D / 16;              // k16 steps over the head dims (S = Q K^T)
  constexpr int NO = D / 8;               // 8-dim tiles of O
  constexpr int NS = kKeys / 8;           // 8-key tiles of S
  static_assert(D == 64 || D == 128, "head_dim");
  static_assert(MT == 1 || MT == 2, "m-tiles per warp");
  static_assert(kKeys * CH % kThreads == 0 && kKeys <= kThreads, "K/V tile copy");
  extern __shared__ __align__(16) unsigned char smem[];
  T* const qs = reinterpret_cast<T*>(smem);                     // [ROWS][DP]; a warp's rows, later its output
  T* const ks = qs + ROWS * DP;                                 // [kStages][kKeys][DP]
  T* const vs = ks + kStages * kKeys * DP;                      // [kStages][kKeys][DP]
  int32_t* const slot_s = reinterpret_cast<int32_t*>(vs + kStages * kKeys * DP);  // [kStages][kKeys]

  const int kvh = static_cast<int>(blockIdx.x % p.num_kv_heads);
  const int tile = static_cast<int>(blockIdx.x / p.num_kv_heads);
  const int G = p.group;
  const int t0 = p.tiles[2 * tile];
  const int ntok = min(p.tiles[2 * tile + 1], ROWS / G);
  const int nrows = ntok * G, last_row = nrows - 1;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  const int window = p.sliding_window;
  auto first_key = [window](int pos) { return window > 0 ? max(0, pos - window + 1) : 0; };
  auto pos_of_row = [&](int r) { return p.positions[t0 + min(r, last_row) / G]; };
  const int kbegin = first_key(p.positions[t0]);
  const int kend = p.positions[t0 + ntok - 1] + 1;
  const int ntiles = (kend - kbegin + kKeys - 1) / kKeys;
  const int32_t* blocks = p.block_ids + p.indptr[p.token_seq[t0]];
  const int64_t row_stride = int64_t{p.num_kv_heads} * D;
  const int64_t qrow0 = int64_t{t0} * p.num_heads + int64_t{kvh} * G;  // q/out row of (t0, head kvh * G)
  auto qrow = [&](int r) { return qrow0 + int64_t{r / G} * p.num_heads + r % G; };
  // The cache slot of key tile n's key j (-1 past kend).
  auto slot_of = [&](int n, int j) -> int32_t {
    const int key = kbegin + n * kKeys + j;
    if (n >= ntiles || key >= kend) return -1;
    const int b = p.block_shift >= 0 ? key >> p.block_shift : key / p.block_size;
    return __ldg(blocks + b) * p.block_size + (key - b * p.block_size);
  };
  // Key tile n into its stage, from the slots in slot_s[n % kStages]; zeros past kend (V rows
  // there may hold NaN).
  auto load_kv = [&](int n) {
    const int stage = n % kStages;
    T* const kd = ks + stage * kKeys * DP;
    T* const vd = vs + stage * kKeys * DP;
#pragma unroll
    for (int it = 0; it < kKeys * CH / kThreads; ++it) {
      const int i = threadIdx.x + it * kThreads;
      const int j = i / CH, ch = i % CH;
      const int32_t slot = slot_s[stage * kKeys + j];
      const int64_t off = slot >= 0 ? int64_t{slot} * row_stride + kvh * D + 8 * ch : 0;
      cp_async16(kd + j * DP + 8 * ch, p.k_cache + off, slot >= 0);
      cp_async16(vd + j * DP + 8 * ch, p.v_cache + off, slot >= 0);
    }
  };

  // Prologue: the slots of key tiles 0 .. kStages - 1, Q and key tiles 0 .. kStages - 2. Group
  // i of cp.async holds key tile i (group 0 also Q; groups past the last tile are empty).
  if (threadIdx.x < kKeys) {
#pragma unroll
    for (int n = 0; n < kStages; ++n) slot_s[n * kKeys + threadIdx.x] = slot_of(n, threadIdx.x);
  }
  for (int i = threadIdx.x; i < ROWS * CH; i += kThreads) {
    const int r = i / CH, ch = i % CH;
    const bool valid = r < nrows;
    cp_async16(qs + r * DP + 8 * ch, valid ? p.q + qrow(r) * D + 8 * ch : p.q, valid);
  }
  __syncthreads();  // the slots
#pragma unroll
  for (int n = 0; n < kStages - 1; ++n) {
    if (n < ntiles) load_kv(n);
    cp_async_commit();
  }

  // This lane's rows (g and g + 8 of each of the warp's 16-row m-tiles) and the warp's range
  // of positions.
  const int wrow = WR * warp;
  int pos[MT][2], first[MT][2];
  bool exact[MT];  // the m-tile's first row sees few keys: P in two T parts
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    pos[mt][0] = pos_of_row(wrow + 16 * mt + g), pos[mt][1] = pos_of_row(wrow + 16 * mt + g + 8);
    first[mt][0] = first_key(pos[mt][0]), first[mt][1] = first_key(pos[mt][1]);
    const int pos0 = pos_of_row(wrow + 16 * mt);
    exact[mt] = pos0 + 1 - first_key(pos0) < kExactBelow;
  }
  const bool has_rows = wrow < nrows;
  const int wpos_min = pos_of_row(wrow), wpos_max = pos_of_row(wrow + WR - 1);
  const int wfirst_min = first_key(wpos_min), wfirst_max = first_key(wpos_max);

  uint32_t qf[kQInRegs ? NK : 1][4];  // A fragments of the warp's 16 Q rows (MT == 1)
  float o[MT][NO][4] = {};            // rows g, g + 8 of each m-tile x dims 8n + 2c, +1
  float m[MT][2], l[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) m[mt][0] = m[mt][1] = -INFINITY, l[mt][0] = l[mt][1] = 0.0f;
  for (int it = 0; it < ntiles; ++it) {
    const int k0 = kbegin + it * kKeys;
    cp_async_wait<kStages - 2>();  // group it (key tile it) is in
    __syncthreads();               // for every thread; every warp is done with tile it - 1
    if constexpr (kQInRegs) {
      if (it == 0) {
#pragma unroll
        for (int kk = 0; kk < NK; ++kk) ldsm_x4(qf[kk], qs + (wrow + lane % 16) * DP + 16 * kk + 8 * (lane / 16));
      }
    }
    if (it + kStages - 1 < ntiles) load_kv(it + kStages - 1);  // into tile it - 1's stage
    cp_async_commit();
    // The slots of tile it + kStages (in tile it's slot_s, read by the load above at it - 1);
    // the block ids load while this tile computes.
    const int32_t next_slot = threadIdx.x < kKeys ? slot_of(it + kStages, threadIdx.x) : -1;

    if (has_rows && k0 <= wpos_max && k0 + kKeys - 1 >= wfirst_min) {  // some row of the warp sees these keys
      const T* const kt = ks + (it % kStages) * kKeys * DP;
      const T* const vt = vs + (it % kStages) * kKeys * DP;
      float s[MT][NS][4] = {};  // rows g, g + 8 x keys 8j + 2c, +1
#pragma unroll
      for (int kk = 0; kk < NK; kk += 2) {
        uint32_t a[MT][2][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          if constexpr (kQInRegs) {
#pragma unroll
            for (int e = 0; e < 4; ++e) a[mt][0][e] = qf[kk][e], a[mt][1][e] = qf[kk + 1][e];
          } else {
            const T* q_at = qs + (wrow + 16 * mt + lane % 16) * DP + 16 * kk + 8 * (lane / 16);
            ldsm_x4(a[mt][0], q_at);
            ldsm_x4(a[mt][1], q_at + 16);
          }
        }
#pragma unroll
        for (int j = 0; j < NS; ++j) {
          uint32_t b[4];
          ldsm_x4(b, kt + (8 * j + lane % 8) * DP + 16 * kk + 8 * (lane / 8));
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma_k16<T>(s[mt][j], a[mt][0], b[0], b[1]);
            mma_k16<T>(s[mt][j], a[mt][1], b[2], b[3]);
          }
        }
      }
      const bool masked = k0 + kKeys - 1 > wpos_min || k0 < wfirst_max;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int j = 0; j < NS; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            float x = s[mt][j][e] * p.scale_log2;
            if (masked) {
              const int key = k0 + 8 * j + 2 * c + (e & 1);
              if (key > pos[mt][e / 2] || key < first[mt][e / 2]) x = -INFINITY;
            }
            s[mt][j][e] = x;
            mx[e / 2] = fmaxf(mx[e / 2], x);
          }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
          mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
          // A row with no visible key yet keeps m = -inf; 0 stands in so that 2^(-inf - ref) = 0.
          const float mn = fmaxf(m[mt][h], mx[h]);
          const float ref = mn == -INFINITY ? 0.0f : mn;
          const float a = exp2_approx(m[mt][h] - ref);
          m[mt][h] = mn;
          float sum = 0.0f;
#pragma unroll
          for (int j = 0; j < NS; ++j) {
            s[mt][j][2 * h] = exp2_approx(s[mt][j][2 * h] - ref);
            s[mt][j][2 * h + 1] = exp2_approx(s[mt][j][2 * h + 1] - ref);
            sum += s[mt][j][2 * h] + s[mt][j][2 * h + 1];
          }
          l[mt][h] = l[mt][h] * a + sum;
#pragma unroll
          for (int n = 0; n < NO; ++n) o[mt][n][2 * h] *= a, o[mt][n][2 * h + 1] *= a;
        }
      }
#pragma unroll
      for (int kk = 0; kk < kKeys / 16; ++kk) {  // keys 16kk .. 16kk + 15
        uint32_t pa[MT][4], pe[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          pa[mt][0] = pack_f32x2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
          pa[mt][1] = pack_f32x2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
          pa[mt][2] = pack_f32x2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
          pa[mt][3] = pack_f32x2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
          if (exact[mt]) {
            pe[mt][0] = pack_error<T>(s[mt][2 * kk][0], s[mt][2 * kk][1], pa[mt][0]);
            pe[mt][1] = pack_error<T>(s[mt][2 * kk][2], s[mt][2 * kk][3], pa[mt][1]);
            pe[mt][2] = pack_error<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1], pa[mt][2]);
            pe[mt][3] = pack_error<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3], pa[mt][3]);
          }
        }
#pragma unroll
        for (int n = 0; n < NO; n += 2) {  // dims 8n .. 8n + 15
          uint32_t b[4];
          ldsm_x4_trans(b, vt + (16 * kk + lane % 8 + 8 * ((lane / 8) % 2)) * DP + 8 * n + 8 * (lane / 16));
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma_k16<T>(o[mt][n], pa[mt], b[0], b[1]);
            mma_k16<T>(o[mt][n + 1], pa[mt], b[2], b[3]);
            if (exact[mt]) {
              mma_k16<T>(o[mt][n], pe[mt], b[0], b[1]);
              mma_k16<T>(o[mt][n + 1], pe[mt], b[2], b[3]);
            }
          }
        }
      }
    }
    if (threadIdx.x < kKeys) slot_s[(it % kStages) * kKeys + threadIdx.x] = next_slot;
  }
  cp_async_wait<0>();  // only empty groups are left

  // out = O / l, staged through the warp's own Q rows for 16-byte stores.
  __syncwarp();  // the warp's last reads of its Q rows
  T* const os = qs + wrow * DP;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    float inv[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = l[mt][h];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      inv[h] = sum > 0.0f ? 1.0f / sum : 0.0f;
    }
#pragma unroll
    for (int n = 0; n < NO; ++n) {
      *reinterpret_cast<uint32_t*>(os + (16 * mt + g) * DP + 8 * n + 2 * c) =
          pack_f32x2<T>(o[mt][n][0] * inv[0], o[mt][n][1] * inv[0]);
      *reinterpret_cast<uint32_t*>(os + (16 * mt + g + 8) * DP + 8 * n + 2 * c) =
          pack_f32x2<T>(o[mt][n][2] * inv[1], o[mt][n][3] * inv[1]);
    }
  }
  __syncwarp();
  for (int i = lane; i < WR * CH; i += 32) {
    const int r = i / CH, ch = i % CH;
    if (wrow + r > last_row) break;
    *reinterpret_cast<uint4*>(p.out + qrow(wrow + r) * D + 8 * ch) = *reinterpret_cast<const uint4*>(os + r * DP + 8 * ch);
  }
}

template <typename T, int D, int MT>
void launch(const Params<T>& p, int num_tiles, cudaStream_t stream) {
  static const cudaError_t configured =
      cudaFuncSetAttribute(prefill_kernel<T, D, MT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(smem_bytes<T, D, MT>()));
  (void)configured;  // a failure shows at the launch
  const unsigned ctas = static_cast<unsigned>(int64_t{num_tiles} * p.num_kv_heads);
  prefill_kernel<T, D, MT><<<ctas, kThreads, smem_bytes<T, D, MT>(), stream>>>(p);
}

bool takes_tiles(int64_t num_heads, int64_t num_kv_heads, int64_t head_dim, int tile_rows) {
  return (head_dim == 64 || head_dim == 128) && (tile_rows == 64 || tile_rows == 128) && num_kv_heads > 0 &&
         num_heads % num_kv_heads == 0 && num_heads / num_kv_heads <= tile_rows;
}

}  // namespace

size_t attention_plan_ints(int64_t num_tokens) { return static_cast<size_t>(2 * std::max<int64_t>(num_tokens, 0)); }

AttentionPlanCounts plan_attention(const int32_t* positions, const int32_t* query_start_loc, int64_t num_seqs,
                                   int64_t num_heads, int64_t num_kv_heads, int64_t head_dim, int32_t* plan,
                                   int tile_rows, int num_sms) {
  AttentionPlanCounts counts;
  if (tile_rows <= 0) {
    // 128-row tiles, unless they would leave SMs idle: under two CTAs (tile x KV head) per
    // SM, 64-row tiles (twice the CTAs; docs/benchmarks.md has the gain).
    tile_rows = 128;
    const int64_t g = num_kv_heads > 0 ? num_heads / num_kv_heads : 0;
    if (num_sms > 0 && g > 0 && g <= 64) {
      const int64_t tile_tokens = 128 / g;
      int64_t tiles = 0;
      for (int64_t s = 0; s < num_seqs; ++s) {
        const int64_t len = query_start_loc[s + 1] - query_start_loc[s];
        if (len >= kMinRunTokens) tiles += (len + tile_tokens - 1) / tile_tokens;
      }
      if (tiles > 0 && tiles * num_kv_heads < 2 * int64_t{num_sms}) tile_rows = 64;
    }
  }
  counts.tile_rows = tile_rows;
  const bool tiles_ok = takes_tiles(num_heads, num_kv_heads, head_dim, counts.tile_rows);
  const int32_t tile_tokens = tiles_ok ? static_cast<int32_t>(counts.tile_rows / (num_heads / num_kv_heads)) : 0;
  struct Tile {
    int32_t first, n, last_pos;
  };
  std::vector<Tile> tiles;
  for (int64_t s = 0; s < num_seqs; ++s) {
    const int32_t begin = query_start_loc[s], end = query_start_loc[s + 1];
    if (tiles_ok && end - begin >= kMinRunTokens) {
      for (int32_t t = begin; t < end; t += tile_tokens) {
        const int32_t n = std::min(tile_tokens, end - t);
        tiles.push_back({t, n, positions[t + n - 1]});
      }
    } else {
      for (int32_t t = begin; t < end; ++t) plan[counts.decode_tokens++] = t;
    }
  }
  // Longest key ranges first: the last wave holds the short tiles.
  std::stable_sort(tiles.begin(), tiles.end(), [](const Tile& a, const Tile& b) { return a.last_pos > b.last_pos; });
  int32_t* out = plan + counts.decode_tokens;
  for (const Tile& t : tiles) *out++ = t.first, *out++ = t.n;
  counts.prefill_tiles = static_cast<int32_t>(tiles.size());
  return counts;
}

namespace detail {

template <typename T>
void attention_prefill(const T* q, const T* k_cache, const T* v_cache, const AttentionMetadata& meta,
                       const AttentionShape& shape, T* out, cudaStream_t stream) {
  TESSERA_CHECK_MSG(takes_tiles(shape.num_heads, shape.num_kv_heads, shape.head_dim, meta.plan_tile_rows),
                    "plan_attention planned prefill tiles for another attention shape");
  Params<T> p{};
  p.q = q, p.k_cache = k_cache, p.v_cache = v_cache;
  p.positions = meta.positions, p.token_seq = meta.token_seq;
  p.indptr = meta.block_table_indptr, p.block_ids = meta.block_table_ids;
  p.tiles = meta.plan + meta.plan_decode_tokens;
  p.num_heads = static_cast<int>(shape.num_heads), p.num_kv_heads = static_cast<int>(shape.num_kv_heads);
  p.group = p.num_heads / p.num_kv_heads;
  p.block_size = static_cast<int>(shape.block_size);
  p.block_shift = (p.block_size & (p.block_size - 1)) == 0 ? __builtin_ctz(static_cast<unsigned>(p.block_size)) : -1;
  p.sliding_window = static_cast<int>(std::min<int64_t>(shape.sliding_window, INT32_MAX));
  p.scale_log2 = shape.scale * kLog2e;
  p.out = out;
  const bool wide = meta.plan_tile_rows == 128;  // 2 m-tiles per warp
  if (shape.head_dim == 64) {
    wide ? launch<T, 64, 2>(p, meta.plan_prefill_tiles, stream) : launch<T, 64, 1>(p, meta.plan_prefill_tiles, stream);
  } else {
    wide ? launch<T, 128, 2>(p, meta.plan_prefill_tiles, stream)
         : launch<T, 128, 1>(p, meta.plan_prefill_tiles, stream);
  }
}

#define TESSERA_INSTANTIATE(T)                                                                            \
  template void attention_prefill<T>(const T*, const T*, const T*, const AttentionMetadata&, const AttentionShape&, \
                                     T*, cudaStream_t);
TESSERA_FOR_EACH_ELEM(TESSERA_INSTANTIATE)
#undef TESSERA_INSTANTIATE

}  // namespace detail
}  // namespace tessera::cuda
