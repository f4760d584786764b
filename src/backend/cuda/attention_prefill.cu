// The tiled prefill half of paged attention (FlashAttention-2 style, mma.sync bf16 -> fp32):
// runs of prefill tokens of one sequence take a CTA per (tile of query tokens, KV head), so
// each K/V row of the paged cache is read once per tile instead of once per token. The host
// plans the tiles once per step (plan_attention below); attention.cu launches this kernel for
// them and its split-KV kernel for the step's other tokens.
//
// A CTA holds ROWS = 128 (or 64) query rows: the G query heads of one GQA group for ROWS / G
// consecutive tokens, row r = token r / G, head r % G (G = 3: 42 tokens, 126 rows), so every
// row reads the same K/V. One warp per 16 rows; keys in tiles of 64, copied from the paged
// cache (block table lookups per key) into shared memory with cp.async, 3 (or 2) stages deep,
// one __syncthreads per tile. 128 rows: one CTA of 8 warps per SM at head_dim 128 (two at
// 64); 64 rows: two CTAs of 4 warps (four at 64), twice the K/V traffic per row but CTAs
// that wait at different times. Per warp and key tile, with x = scale * log2(e) * q . k:
//   S [16 rows x 64 keys] = Q K^T: Q's A fragments stay in registers (ldmatrix once), K's B
//     fragments come from ldmatrix on the [key][dim] tile.
//   Causal and window mask per (row position, key): key in [first(pos), pos]; only tiles on
//     the diagonal or the window's edge pay for it; a warp skips tiles none of its rows see.
//   Online softmax in fp32 (base 2): m_new = max(m, max_j x_j), a = 2^(m - m_new),
//     l = l a + sum_j p_j, O = O a + P V, p_j = 2^(x_j - m_new); out = O / l at the end.
//   O [16 rows x D] += P V: P's A fragments are S's C fragments packed to bf16 pairs; V's B
//     fragments come from ldmatrix.trans on the [key][dim] tile.
// P in bf16 rounds each weight by up to 2^-8 relative; over many keys the errors average out
// (random N(0, 1) data: out within ~8e-4 of fp32 at 128 .. 256 keys, ~5e-4 beyond), but a
// row that sees few keys shows them (up to ~2.5e-3 below 16 keys, past the tests' 2e-3), so
// warps whose first row sees fewer than 128 keys add a second mma with P's rounding error
// (P to 2^-16, as the split-KV kernel does): the first 128 positions of a prompt, or every
// row under a window below 128.
// Shared rows are padded by 16 bytes: ldmatrix and cp.async are conflict-free.
// head_dim 64 and 128; other head dims take the split-KV kernel.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "backend/cuda/attention_internal.h"
#include "common/check.h"

namespace tessera::cuda {
namespace {

constexpr int kKeys = 64;         // keys per K/V tile
constexpr int kExactBelow = 128;  // a warp whose rows see fewer keys than this splits P in two
constexpr int kMinRunTokens = 16; // shorter runs take the split-KV kernel token by token
constexpr float kLog2e = 1.4426950408889634f;

// Query rows per CTA (token x head): 128 unless TESSERA_PREFILL_ROWS=64 (a tuning switch).
int default_tile_rows() {
  static const int rows = [] {
    const char* e = std::getenv("TESSERA_PREFILL_ROWS");
    return e != nullptr && std::atoi(e) == 64 ? 64 : 128;
  }();
  return rows;
}

// 128 rows: 8 warps, 3 stages; 64 rows: 4 warps, 2 stages (two CTAs fit an SM's shared memory).
template <int ROWS>
constexpr int kStagesOf = ROWS == 128 ? 3 : 2;

template <int D, int ROWS>
constexpr size_t smem_bytes() {
  return size_t{ROWS + 2 * kStagesOf<ROWS> * kKeys} * (D + 8) * sizeof(bf16);
}

struct Params {
  const bf16* q;
  const bf16* k_cache;
  const bf16* v_cache;
  const int32_t* positions;
  const int32_t* token_seq;
  const int32_t* indptr;
  const int32_t* block_ids;
  const int32_t* tiles;  // [num_tiles][2]: first token, number of tokens
  int num_heads, num_kv_heads, group;
  int block_size, block_shift;  // block_shift: log2(block_size), or -1 when not a power of two
  int sliding_window;
  float scale_log2;  // scale * log2(e)
  bf16* out;
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

// Four 8x8 bf16 matrices; lane l gives the address of row l % 8 of matrix l / 8.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void mma_k16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float exp2_approx(float x) {  // 2^-inf = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// End of the PTX wrappers.
// (lo, hi) as a bf16 pair, lo in the low half.
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// The rounding error of pack_bf16(lo, hi), as a bf16 pair.
__device__ __forceinline__ uint32_t pack_bf16_error(float lo, float hi, uint32_t packed) {
  const float lo_r = __uint_as_float(packed << 16), hi_r = __uint_as_float(packed & 0xffff0000u);
  return pack_bf16(lo - lo_r, hi - hi_r);
}

template <int D, int ROWS>
__global__ void __launch_bounds__(2 * ROWS, (D == 64 ? 2 : 1) * (128 / ROWS)) prefill_kernel(const Params p) {
  constexpr int kThreads = 2 * ROWS;  // a warp per 16 rows
  constexpr int kStages = kStagesOf<ROWS>;
  constexpr int DP = D + 8;      // padded shared row (bf16)
  constexpr int CH = D / 8;      // 16-byte chunks per row
  constexpr int NK = D / 16;     // k16 steps over the head dims (S = Q K^T)
  constexpr int NO = D / 8;      // 8-dim tiles of O
  constexpr int NS = kKeys / 8;  // 8-key tiles of S
  static_assert(D == 64 || D == 128, "head_dim");
  static_assert(ROWS == 64 || ROWS == 128, "rows");
  static_assert(kKeys * CH % kThreads == 0, "K/V tile copy");
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* const qs = reinterpret_cast<bf16*>(smem);  // [ROWS][DP]; each warp's rows, later its output
  bf16* const ks = qs + ROWS * DP;                 // [kStages][kKeys][DP]
  bf16* const vs = ks + kStages * kKeys * DP;      // [kStages][kKeys][DP]

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
  const int32_t* blocks = p.block_ids + p.indptr[p.token_seq[t0]];
  const int64_t row_stride = int64_t{p.num_kv_heads} * D;
  const int64_t qrow0 = int64_t{t0} * p.num_heads + int64_t{kvh} * G;  // q/out row of (t0, head kvh * G)
  auto qrow = [&](int r) { return qrow0 + int64_t{r / G} * p.num_heads + r % G; };

  for (int i = threadIdx.x; i < ROWS * CH; i += kThreads) {
    const int r = i / CH, ch = i % CH;
    const bool valid = r < nrows;
    cp_async16(qs + r * DP + 8 * ch, valid ? p.q + qrow(r) * D + 8 * ch : p.q, valid);
  }
  // Keys [k0, k0 + kKeys) into stage `stage`; zeros past kend (V rows there may hold NaN).
  auto load_kv = [&](int k0, int stage) {
    bf16* const kd = ks + stage * kKeys * DP;
    bf16* const vd = vs + stage * kKeys * DP;
#pragma unroll
    for (int it = 0; it < kKeys * CH / kThreads; ++it) {
      const int i = threadIdx.x + it * kThreads;
      const int j = i / CH, ch = i % CH, key = k0 + j;
      const bool valid = key < kend;
      int64_t off = 0;
      if (valid) {
        const int b = p.block_shift >= 0 ? key >> p.block_shift : key / p.block_size;
        off = (int64_t{__ldg(blocks + b)} * p.block_size + (key - b * p.block_size)) * row_stride + kvh * D + 8 * ch;
      }
      cp_async16(kd + j * DP + 8 * ch, p.k_cache + off, valid);
      cp_async16(vd + j * DP + 8 * ch, p.v_cache + off, valid);
    }
  };

  // Group i of cp.async holds key tile i (group 0 also Q; groups past the last tile are empty).
  const int ntiles = (kend - kbegin + kKeys - 1) / kKeys;
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) {
    if (i < ntiles) load_kv(kbegin + i * kKeys, i);
    cp_async_commit();
  }

  // This lane's rows (g and g + 8 of the warp's 16) and the warp's range of positions.
  const int r_lo = 16 * warp + g, r_hi = r_lo + 8;
  const int pos_lo = pos_of_row(r_lo), pos_hi = pos_of_row(r_hi);
  const int first_lo = first_key(pos_lo), first_hi = first_key(pos_hi);
  const bool has_rows = 16 * warp < nrows;
  const int wpos_min = pos_of_row(16 * warp), wpos_max = pos_of_row(16 * warp + 15);
  const int wfirst_min = first_key(wpos_min), wfirst_max = first_key(wpos_max);
  const bool exact = wpos_min + 1 - wfirst_min < kExactBelow;

  uint32_t qf[NK][4];  // A fragments of the warp's 16 Q rows
  float o[NO][4] = {};  // rows g, g + 8 x dims 8n + 2c, +1
  float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.0f, l_hi = 0.0f;
  for (int it = 0; it < ntiles; ++it) {
    const int k0 = kbegin + it * kKeys;
    cp_async_wait<kStages - 2>();  // group it (key tile it) is in
    __syncthreads();               // for every thread; and every warp is done with tile it - 1
    if (it == 0) {
#pragma unroll
      for (int kk = 0; kk < NK; ++kk) ldsm_x4(qf[kk], qs + (16 * warp + lane % 16) * DP + 16 * kk + 8 * (lane / 16));
    }
    const int next = it + kStages - 1;
    if (next < ntiles) load_kv(kbegin + next * kKeys, next % kStages);  // into tile it - 1's stage
    cp_async_commit();
    if (!has_rows || k0 > wpos_max || k0 + kKeys - 1 < wfirst_min) continue;  // no row of the warp sees these keys
    const bf16* const kt = ks + (it % kStages) * kKeys * DP;
    const bf16* const vt = vs + (it % kStages) * kKeys * DP;

    float s[NS][4] = {};  // rows g, g + 8 x keys 8j + 2c, +1
#pragma unroll
    for (int j = 0; j < NS; ++j) {
#pragma unroll
      for (int kk = 0; kk < NK; kk += 2) {
        uint32_t b[4];
        ldsm_x4(b, kt + (8 * j + lane % 8) * DP + 16 * kk + 8 * (lane / 8));
        mma_k16(s[j], qf[kk], b[0], b[1]);
        mma_k16(s[j], qf[kk + 1], b[2], b[3]);
      }
    }
    const bool masked = k0 + kKeys - 1 > wpos_min || k0 < wfirst_max;
    float mx_lo = -INFINITY, mx_hi = -INFINITY;
#pragma unroll
    for (int j = 0; j < NS; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[j][e] * p.scale_log2;
        if (masked) {
          const int key = k0 + 8 * j + 2 * c + (e & 1);
          const bool lo = e < 2;
          if (key > (lo ? pos_lo : pos_hi) || key < (lo ? first_lo : first_hi)) x = -INFINITY;
        }
        s[j][e] = x;
        if (e < 2) {
          mx_lo = fmaxf(mx_lo, x);
        } else {
          mx_hi = fmaxf(mx_hi, x);
        }
      }
    }
    mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 1));
    mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 2));
    mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 1));
    mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 2));
    // A row with no visible key yet keeps m = -inf; 0 stands in so that 2^(-inf - ref) = 0.
    const float mn_lo = fmaxf(m_lo, mx_lo), mn_hi = fmaxf(m_hi, mx_hi);
    const float ref_lo = mn_lo == -INFINITY ? 0.0f : mn_lo, ref_hi = mn_hi == -INFINITY ? 0.0f : mn_hi;
    const float a_lo = exp2_approx(m_lo - ref_lo), a_hi = exp2_approx(m_hi - ref_hi);
    m_lo = mn_lo, m_hi = mn_hi;
    float sum_lo = 0.0f, sum_hi = 0.0f;
#pragma unroll
    for (int j = 0; j < NS; ++j) {
      s[j][0] = exp2_approx(s[j][0] - ref_lo), s[j][1] = exp2_approx(s[j][1] - ref_lo);
      s[j][2] = exp2_approx(s[j][2] - ref_hi), s[j][3] = exp2_approx(s[j][3] - ref_hi);
      sum_lo += s[j][0] + s[j][1];
      sum_hi += s[j][2] + s[j][3];
    }
    l_lo = l_lo * a_lo + sum_lo, l_hi = l_hi * a_hi + sum_hi;
#pragma unroll
    for (int n = 0; n < NO; ++n) o[n][0] *= a_lo, o[n][1] *= a_lo, o[n][2] *= a_hi, o[n][3] *= a_hi;

#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {  // keys 16kk .. 16kk + 15
      uint32_t pa[4], pe[4];
      pa[0] = pack_bf16(s[2 * kk][0], s[2 * kk][1]);
      pa[1] = pack_bf16(s[2 * kk][2], s[2 * kk][3]);
      pa[2] = pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      pa[3] = pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
      if (exact) {
        pe[0] = pack_bf16_error(s[2 * kk][0], s[2 * kk][1], pa[0]);
        pe[1] = pack_bf16_error(s[2 * kk][2], s[2 * kk][3], pa[1]);
        pe[2] = pack_bf16_error(s[2 * kk + 1][0], s[2 * kk + 1][1], pa[2]);
        pe[3] = pack_bf16_error(s[2 * kk + 1][2], s[2 * kk + 1][3], pa[3]);
      }
#pragma unroll
      for (int n = 0; n < NO; n += 2) {  // dims 8n .. 8n + 15
        uint32_t b[4];
        ldsm_x4_trans(b, vt + (16 * kk + lane % 8 + 8 * ((lane / 8) % 2)) * DP + 8 * n + 8 * (lane / 16));
        mma_k16(o[n], pa, b[0], b[1]);
        mma_k16(o[n + 1], pa, b[2], b[3]);
        if (exact) {
          mma_k16(o[n], pe, b[0], b[1]);
          mma_k16(o[n + 1], pe, b[2], b[3]);
        }
      }
    }
  }
  cp_async_wait<0>();  // only empty groups are left

  // out = O / l, staged through the warp's own Q rows for 16-byte stores.
  l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 1);
  l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 2);
  l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 1);
  l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 2);
  const float inv_lo = l_lo > 0.0f ? 1.0f / l_lo : 0.0f, inv_hi = l_hi > 0.0f ? 1.0f / l_hi : 0.0f;
  bf16* const os = qs + 16 * warp * DP;
#pragma unroll
  for (int n = 0; n < NO; ++n) {
    *reinterpret_cast<uint32_t*>(os + g * DP + 8 * n + 2 * c) = pack_bf16(o[n][0] * inv_lo, o[n][1] * inv_lo);
    *reinterpret_cast<uint32_t*>(os + (g + 8) * DP + 8 * n + 2 * c) = pack_bf16(o[n][2] * inv_hi, o[n][3] * inv_hi);
  }
  __syncwarp();
  for (int i = lane; i < 16 * CH; i += 32) {
    const int r = i / CH, ch = i % CH;
    if (16 * warp + r > last_row) break;
    *reinterpret_cast<uint4*>(p.out + qrow(16 * warp + r) * D + 8 * ch) =
        *reinterpret_cast<const uint4*>(os + r * DP + 8 * ch);
  }
}

template <int D, int ROWS>
void launch(const Params& p, int num_tiles, cudaStream_t stream) {
  static const cudaError_t configured = cudaFuncSetAttribute(
      prefill_kernel<D, ROWS>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes<D, ROWS>()));
  (void)configured;  // a failure shows at the launch
  const unsigned ctas = static_cast<unsigned>(int64_t{num_tiles} * p.num_kv_heads);
  prefill_kernel<D, ROWS><<<ctas, 2 * ROWS, smem_bytes<D, ROWS>(), stream>>>(p);
}

bool takes_tiles(int64_t num_heads, int64_t num_kv_heads, int64_t head_dim, int tile_rows) {
  return (head_dim == 64 || head_dim == 128) && (tile_rows == 64 || tile_rows == 128) && num_kv_heads > 0 &&
         num_heads % num_kv_heads == 0 && num_heads / num_kv_heads <= tile_rows;
}

}  // namespace

size_t attention_plan_ints(int64_t num_tokens) { return static_cast<size_t>(2 * std::max<int64_t>(num_tokens, 0)); }

AttentionPlanCounts plan_attention(const int32_t* positions, const int32_t* query_start_loc, int64_t num_seqs,
                                   int64_t num_heads, int64_t num_kv_heads, int64_t head_dim, int32_t* plan,
                                   int tile_rows) {
  AttentionPlanCounts counts;
  counts.tile_rows = tile_rows > 0 ? tile_rows : default_tile_rows();
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

void attention_prefill(const bf16* q, const bf16* k_cache, const bf16* v_cache, const AttentionMetadata& meta,
                       const AttentionShape& shape, bf16* out, cudaStream_t stream) {
  TESSERA_CHECK_MSG(takes_tiles(shape.num_heads, shape.num_kv_heads, shape.head_dim, meta.plan_tile_rows),
                    "plan_attention planned prefill tiles for another attention shape");
  Params p{};
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
  const bool wide = meta.plan_tile_rows == 128;
  if (shape.head_dim == 64) {
    wide ? launch<64, 128>(p, meta.plan_prefill_tiles, stream) : launch<64, 64>(p, meta.plan_prefill_tiles, stream);
  } else {
    wide ? launch<128, 128>(p, meta.plan_prefill_tiles, stream) : launch<128, 64>(p, meta.plan_prefill_tiles, stream);
  }
}

}  // namespace detail
}  // namespace tessera::cuda
