// Paged attention for prefill chunks, chunked-prefill continuations and decodes in one batch,
// on tensor cores (mma.sync on 16-bit T, bf16 or fp16 -> fp32; sm_80 and later, tuned for the
// H200). Every kernel is a template over T (elem.cuh); the public ops are instantiated for both.
//
// Token t at position pos sees keys [first, pos] of its sequence (first = pos - window + 1
// under a sliding window, else 0; this step's K/V are already in the cache). Per query head,
// in base 2 with x_j = scale * log2(e) * q . k_j, keys taken in steps with an online softmax:
//   m_new = max(m, max_j x_j);   a = 2^(m - m_new)
//   l = l * a + sum_j p_j;   acc = acc * a + sum_j p_j v_j;   p_j = 2^(x_j - m_new)
// and out = acc / l. A token takes splits = min(num_splits, ceil(visible / 64)) of the
// grid's num_splits (64, or AttentionMetadata::min_split_keys; the CTAs past them return at once;
// one split writes out directly). Split s covers keys [first + s*len, first + (s+1)*len),
// len = ceil(visible / splits) rounded up to a step; its (acc, m, l) go to a workspace, and
// the last split CTA of a (token, head chunk) to finish merges them (merge_if_last):
//   M = max_s m_s,  out = sum_s 2^(m_s - M) acc_s / sum_s 2^(m_s - M) l_s.
//
// Grid (KV head x head chunk, token, split) (the token first past 65,535 tokens), 4 warps per
// CTA. A CTA holds up to R (8 or 16) query heads of one GQA group (all of it when G <= 8, or
// <= 16 for head_dim <= 128) as the 16 rows of the mma's A operand, so each K/V row is read
// once per group. Each warp takes every 4th step of 2048 / head_dim keys (8 KB of K and V,
// 16-byte loads straight into registers) and keeps its own (m, l, acc); the warps merge
// through shared memory at the end.
//   S tile = Q [16 heads x 16 dims] . K^T [16 dims x 8 keys]: lane (g = lane/4, c = lane%4)
//     loads K row (key g) at dims 32u + 8c .. +8, which is the B fragment of two k16 chunks
//     when the dims are renumbered (the same renumbering for Q, so the dot products hold).
//   O^T += V^T [16 dims x 16 keys] . P^T [16 keys x 8 heads]: P^T's B fragment is the score
//     tile's C fragment as it stands, as a T pair plus the T pair of its rounding error (two
//     mmas: P to 2^-17 in bf16, not 2^-9; see split_p); lane (g, c) loads V rows of keys 2c,
//     2c+1, 2c+8, 2c+9 at dims 64w + 8g .. +8 and pairs two keys' values with prmt, so dim
//     tile 4w + q holds dims 64w + 8g + 2q (row g) and + 1 (row g + 8). No head rows idle.
// With head_dim 256 a step is 8 keys and O^T uses the k8 mma.
//
// With a prefill plan (plan_attention, attention_prefill.cu) the runs of prefill tokens go to
// the tiled prefill kernel first, and this kernel takes the plan's other tokens: the CTA's
// token index picks one from the plan's list; without a plan it is the token.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cuda/attention_internal.h"
#include "backend/cuda/elem.cuh"
#include "backend/cuda/fused_ops.h"
#include "backend/cuda/pdl.h"
#include "backend/cuda/rope_device.cuh"
#include "common/check.h"

namespace tessera::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr float kLog2e = 1.4426950408889634f;

template <typename T>
struct Params {
  const T* q;
  const T* k_cache;
  const T* v_cache;
  const int32_t* positions;
  const int32_t* token_seq;
  const int32_t* indptr;
  const int32_t* block_ids;
  const int32_t* tokens;  // the CTAs' tokens (a plan's decode tokens), or null: the CTA's token index
  int num_heads, num_kv_heads, group, head_chunks;
  int block_size, block_shift;  // block_shift: log2(block_size), or -1 when not a power of two
  int sliding_window;
  int num_splits;
  int min_split_keys;  // a token takes at most one split per this many visible keys
  float scale_log2;  // scale * log2(e)
  T* out;            // num_splits == 1
  float* part_acc;   // [num_tokens, num_heads, num_splits, head_dim], num_splits > 1
  float* part_m;     // [num_tokens, num_heads, num_splits]
  float* part_l;     // [num_tokens, num_heads, num_splits]
  int* arrivals;  // [tokens, KV heads x head chunks]: splits done per (token, head chunk); 0 between launches
  bool heads_fastest;  // grid (KV heads x head chunks, tokens, splits): a token's KV heads side by side
  // RoPE in the prologue (rope_paged_attention; q unused): the q/k/v projections
  // [tokens, (num_heads + 2 num_kv_heads) * D] with qkv_rope_cache's bias, norms and angles.
  const T* qkv;
  const T* qkv_bias;
  const T* q_norm;
  const T* k_norm;
  const float* inv_freq;
  const int64_t* slot_mapping;
  T* k_cache_out;  // the caches, written by the CTA whose keys end at its token
  T* v_cache_out;
  float eps;
  bool interleaved;
};

__device__ __forceinline__ float exp2_approx(float x) {  // 2^-inf = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Halves {a.lo, b.lo} (sel 0x5410) or {a.hi, b.hi} (sel 0x7632) as one pair of 16-bit elements.
__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
  return r;
}

// (lo, hi) as two T pairs, big + small, that sum to it within 2^-17 relative for bf16 (one
// bf16 pair alone would round p by up to 2^-9), 2^-23 for fp16 (alone: 2^-12; p below 2^-2
// meets fp16's subnormals, 2^-25 absolute); the second mma costs little next to the loads.
struct PSplit {
  uint32_t big, small;
};
template <typename T>
__device__ __forceinline__ PSplit split_p(float lo, float hi) {
  const elem_x2<T> big = from_f32x2<T>(lo, hi);
  const elem_x2<T> small = from_f32x2<T>(lo - __low2float(big), hi - __high2float(big));
  return {*reinterpret_cast<const uint32_t*>(&big), *reinterpret_cast<const uint32_t*>(&small)};
}

// 16 bytes of the cache at p. The cache streams through once per step: its loads skip L1
// and go first from L2 (policy: l2_evict_first). Past the key range: zeros (a V row there
// may hold NaN, and 0 * NaN = NaN). kCoherent: not the non-coherent path (the CTA wrote some
// of the rows it reads, ordered before by a __syncthreads). (Against plain loads:
// docs/benchmarks.md, "Decode attention's grid order".)
__device__ __forceinline__ uint64_t l2_evict_first() {
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

template <bool kCoherent = false, typename T>
__device__ __forceinline__ void load16(bool valid, const T* p, uint64_t policy, uint32_t (&r)[4]) {
  if constexpr (kCoherent) {
    asm("{\n .reg .pred q;\n setp.ne.b32 q, %4, 0;\n mov.b32 %0, 0;\n mov.b32 %1, 0;\n mov.b32 %2, 0;\n"
        " mov.b32 %3, 0;\n @q ld.global.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%5], %6;\n}"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
        : "r"(static_cast<int>(valid)), "l"(p), "l"(policy));
  } else {
    asm("{\n .reg .pred q;\n setp.ne.b32 q, %4, 0;\n mov.b32 %0, 0;\n mov.b32 %1, 0;\n mov.b32 %2, 0;\n"
        " mov.b32 %3, 0;\n @q ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%5], %6;\n}"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
        : "r"(static_cast<int>(valid)), "l"(p), "l"(policy));
  }
}

// 16 bytes of q at p, or zeros.
template <typename T>
__device__ __forceinline__ void load_q16(bool valid, const T* p, uint32_t (&r)[4]) {
  const uint4 v = valid ? __ldg(reinterpret_cast<const uint4*>(p)) : make_uint4(0, 0, 0, 0);
  r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
}

// The fused RoPE prologue (Params::qkv): the CTA's nh query heads of token t, normed and
// rotated as qkv_rope_cache does (rope_device.cuh: D / 16 lanes per head), into q_s (rows
// nh .. R - 1 zero); the writer (the CTA whose keys end at the token's position) also rotates
// the token's key of KV head kvh and writes it and the value into the caches, for its own
// loads after the __syncthreads that follows (coherent loads) and for later steps.
// scratch: D floats of shared memory for the angles' cos and sin.
template <typename T, int D, int R>
__device__ __forceinline__ void rope_prologue(const Params<T>& p, int t, int kvh, int h0, int nh, int pos,
                                              bool writer, T* q_s, int q_pitch, float* scratch) {
  using namespace rope_detail;
  constexpr int kLanes = D / 16;            // lanes per head
  constexpr int kTasks = (R + 2) * kLanes;  // q rows, then K and V (hi = R, R + 1)
  float* cos_s = scratch;
  float* sin_s = scratch + D / 2;
  const int heads = p.num_heads + 2 * p.num_kv_heads;
  const T* row = p.qkv + int64_t{t} * heads * D;
  const int64_t kv_at = p.slot_mapping[t] * p.num_kv_heads * D + int64_t{kvh} * D;
  auto live = [&](int hi) { return hi < R ? hi < nh : hi < R + 2 && writer; };
  auto load = [&](int task, float (&x)[16]) {
    const int hi = task / kLanes;
    if (!live(hi)) {
#pragma unroll
      for (int e = 0; e < 16; ++e) x[e] = 0.0f;
      return;
    }
    const int h = hi < R ? h0 + hi : p.num_heads + (hi - R) * p.num_kv_heads + kvh;
    load_slice(row + h * D, p.qkv_bias != nullptr ? p.qkv_bias + h * D : nullptr,
               head_slice(task % kLanes, D, p.interleaved), x);
  };
  float x[16];
  load(threadIdx.x, x);  // the projections load while the angles are computed
  for (int i = threadIdx.x; i < D / 2; i += kThreads) sincosf(pos * p.inv_freq[i], &sin_s[i], &cos_s[i]);
  __syncthreads();
  for (int base = 0; base < kTasks; base += kThreads) {  // the same rounds in every lane (norm shuffles)
    const int task = base + static_cast<int>(threadIdx.x);
    if (base > 0) load(task, x);
    const int hi = task / kLanes, j = task % kLanes;
    const HeadSlice s = head_slice(j, D, p.interleaved);
    if (p.q_norm != nullptr || p.k_norm != nullptr) {
      head_rms_norm(x, live(hi) && hi != R + 1, hi < R ? p.q_norm : p.k_norm, p.eps, D, kLanes, s);
    }
    if (hi < R) {  // zeros past nh
      if (live(hi)) rotate_slice<T>(x, j, p.interleaved, cos_s, sin_s);
      store_slice(q_s + hi * q_pitch, s, x);
    } else if (live(hi)) {
      if (hi == R) rotate_slice<T>(x, j, p.interleaved, cos_s, sin_s);
      store_slice((hi == R ? p.k_cache_out : p.v_cache_out) + kv_at, s, x);
    }
  }
}

// After a split's partials are stored: the last of the `splits` CTAs of this (token, head
// chunk) to arrive merges them into out (see the file comment) and resets the count, so the
// counts are zero again for the next launch (and for the next replay of a CUDA graph).
// scratch: `capacity` floats of shared memory the CTA no longer needs. Where the splits'
// (m, l) of its rows fit there, they are read in one parallel pass, each split's weight
// 2^(m - M) computed once, and the acc loads of a row go out eight splits at a time: the
// merge sits on the step's critical path, so its L2 round trips are what it costs.
template <typename T, int D>
__device__ void merge_if_last(const Params<T>& p, int64_t cta, int64_t row0, int nh, int splits, float* scratch,
                              int capacity) {
  __shared__ bool last;
  __threadfence();  // this thread's partials are visible before the count moves
  __syncthreads();
  if (threadIdx.x == 0) {
    int* count = p.arrivals + cta;
    last = atomicAdd(count, 1) == splits - 1;
    if (last) *count = 0;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();  // and the other CTAs' partials are visible here (read through L2: __ldcg)
  auto store = [&](int64_t row, int d, float4 sum, float inv) {
    uint2 v;
    v.x = pack_f32x2<T>(sum.x * inv, sum.y * inv);
    v.y = pack_f32x2<T>(sum.z * inv, sum.w * inv);
    *reinterpret_cast<uint2*>(p.out + row * D + d) = v;
  };
  if (nh * (2 * splits + 1) <= capacity) {
    float* w_s = scratch;                      // [nh][splits]: m, then the weight (0: an empty split)
    float* l_s = scratch + nh * splits;        // [nh][splits]: l
    float* inv_s = scratch + 2 * nh * splits;  // [nh]: 1 / sum of l * weight
    for (int i = threadIdx.x; i < nh * splits; i += kThreads) {
      const int64_t part = (row0 + i / splits) * p.num_splits + i % splits;
      const float l = __ldcg(p.part_l + part), m = __ldcg(p.part_m + part);
      l_s[i] = l;
      w_s[i] = l > 0.0f ? m : -INFINITY;  // an empty split: its acc was never written
    }
    __syncthreads();
    for (int r = threadIdx.x; r < nh; r += kThreads) {
      float big = -INFINITY;
      for (int s = 0; s < splits; ++s) big = fmaxf(big, w_s[r * splits + s]);
      float total = 0.0f;
      for (int s = 0; s < splits; ++s) {
        const float m = w_s[r * splits + s];
        const float w = m == -INFINITY ? 0.0f : exp2_approx(m - big);
        total += w != 0.0f ? l_s[r * splits + s] * w : 0.0f;
        w_s[r * splits + s] = w;
      }
      inv_s[r] = 1.0f / total;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < nh * (D / 4); i += kThreads) {
      const int r = i / (D / 4), d = 4 * (i % (D / 4));
      const int64_t row = row0 + r;
      const float* w = w_s + r * splits;
      float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      for (int s0 = 0; s0 < splits; s0 += 8) {
        float4 a[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          const int s = s0 + u;
          a[u] = s < splits && w[s] != 0.0f
                     ? __ldcg(reinterpret_cast<const float4*>(p.part_acc + (row * p.num_splits + s) * D + d))
                     : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          const int s = s0 + u;
          if (s >= splits || w[s] == 0.0f) continue;
          sum.x += w[s] * a[u].x, sum.y += w[s] * a[u].y, sum.z += w[s] * a[u].z, sum.w += w[s] * a[u].w;
        }
      }
      store(row, d, sum, inv_s[r]);
    }
    return;
  }
  for (int i = threadIdx.x; i < nh * (D / 4); i += kThreads) {  // many splits: per element
    const int64_t row = row0 + i / (D / 4);
    const int d = 4 * (i % (D / 4));
    const float* m = p.part_m + row * p.num_splits;
    const float* l = p.part_l + row * p.num_splits;
    float big = -INFINITY;
    for (int s = 0; s < splits; ++s) {
      if (__ldcg(l + s) > 0.0f) big = fmaxf(big, __ldcg(m + s));
    }
    float total = 0.0f;
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int s = 0; s < splits; ++s) {
      const float ls = __ldcg(l + s);
      if (!(ls > 0.0f)) continue;  // an empty split: its acc was never written
      const float w = exp2_approx(__ldcg(m + s) - big);
      total += ls * w;
      const float4 a = __ldcg(reinterpret_cast<const float4*>(p.part_acc + (row * p.num_splits + s) * D + d));
      sum.x += w * a.x, sum.y += w * a.y, sum.z += w * a.z, sum.w += w * a.w;
    }
    store(row, d, sum, 1.0f / total);
  }
}

// head_dim; query-head rows per CTA (8, or 16 for groups of 9..16). Registers capped for
// 3 CTAs (12 warps) per SM, 2 with 16 rows or head_dim 256.
template <typename T, int D, int R, bool kRope>
__global__ void __launch_bounds__(kThreads, R == 16 || D == 256 ? 2 : 3) attention_kernel(const Params<T> p) {
  constexpr int NT = 256 / D;   // 8-key tiles per warp step
  constexpr int KSTEP = 8 * NT;  // keys per warp step
  constexpr int NU = D / 32;     // 16-byte pieces of a K row per lane
  constexpr int NV = D / 64;     // 16-byte pieces of a V row per lane
  constexpr int NM = D / 16;     // 16-dim tiles of O^T
  constexpr int NH = R / 8;      // 8-head tiles of O^T
  constexpr int QP = D + 32;     // padded q row (T): conflict-free 16-byte reads
  constexpr int OP = D + 2;      // padded o row (fp32): at most 2-way conflicts on 8-byte writes
  static_assert(D == 64 || D == 128 || D == 256, "head_dim");
  static_assert(R == 8 || (R == 16 && D <= 128), "rows");
  __shared__ __align__(16) T q_s[R][QP];
  __shared__ __align__(16) float o_s[kWarps][R][OP];
  __shared__ float m_s[kWarps][R], l_s[kWarps][R];

  pdl_wait();  // launched with PDL (pdl.h)
  pdl_launch_dependents();
  const int cta_t = static_cast<int>(p.heads_fastest ? blockIdx.y : blockIdx.x);
  const int cta_h = static_cast<int>(p.heads_fastest ? blockIdx.x : blockIdx.y);
  const int64_t cta = int64_t{cta_t} * p.num_kv_heads * p.head_chunks + cta_h;  // its arrival count
  const int t = p.tokens != nullptr ? p.tokens[cta_t] : cta_t, split = blockIdx.z;
  const int kvh = cta_h / p.head_chunks;
  const int h0 = kvh * p.group + (cta_h % p.head_chunks) * R;
  const int nh = min(R, (kvh + 1) * p.group - h0);
  const int64_t row0 = int64_t{t} * p.num_heads + h0;  // (t, h0) row of q and out
  const int pos = p.positions[t];
  const int first = p.sliding_window > 0 ? max(0, pos - p.sliding_window + 1) : 0;
  // This token's splits: at most one per min_split_keys visible keys, so short contexts skip
  // the merge (one split) or merge few partials. The CTAs past them take no part.
  const int visible = pos + 1 - first;
  const int splits = min(p.num_splits, max(1, (visible + p.min_split_keys - 1) / p.min_split_keys));
  if (split >= splits) return;
  const int len = ((visible + splits - 1) / splits + KSTEP - 1) / KSTEP * KSTEP;
  const int kbegin = first + split * len, kend = min(pos + 1, kbegin + len);
  if (kbegin >= kend) {  // an empty split (splits > 1 only): no weight in the merge
    for (int r = threadIdx.x; r < nh; r += kThreads) {
      p.part_m[(row0 + r) * p.num_splits + split] = -INFINITY;
      p.part_l[(row0 + r) * p.num_splits + split] = 0.0f;
    }
    merge_if_last<T, D>(p, cta, row0, nh, splits, &o_s[0][0][0], kWarps * R * OP);
    return;
  }
  if constexpr (kRope) {
    rope_prologue<T, D, R>(p, t, kvh, h0, nh, pos, kbegin <= pos && pos < kend, &q_s[0][0], QP, &o_s[0][0][0]);
  } else {
    for (int i = threadIdx.x; i < R * (D / 8); i += kThreads) {
      const int r = i / (D / 8), c = i % (D / 8);
      uint32_t v[4];
      load_q16(r < nh, p.q + (row0 + r) * D + 8 * c, v);
      *reinterpret_cast<uint4*>(&q_s[r][8 * c]) = make_uint4(v[0], v[1], v[2], v[3]);
    }
  }
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  const int32_t* blocks = p.block_ids + p.indptr[p.token_seq[t]];
  const int64_t row_stride = int64_t{p.num_kv_heads} * D;
  const T* kbase = p.k_cache + kvh * D + 8 * c;
  const T* vbase = p.v_cache + kvh * D + 8 * g;
  auto slot_of = [&](int key) -> int64_t {  // -1 past the range
    if (key >= kend) return -1;
    const int b = p.block_shift >= 0 ? key >> p.block_shift : key / p.block_size;
    return int64_t{__ldg(blocks + b)} * p.block_size + (key - b * p.block_size);
  };
  // This lane's K rows (key 8i + g of the step) and V rows (key 8(r/2) + 2c + r%2).
  int64_t kslot[NT], vslot[2 * NT];
  auto find_slots = [&](int key0) {
#pragma unroll
    for (int i = 0; i < NT; ++i) kslot[i] = slot_of(key0 + 8 * i + g);
#pragma unroll
    for (int r = 0; r < 2 * NT; ++r) vslot[r] = slot_of(key0 + 8 * (r / 2) + 2 * c + r % 2);
  };

  const uint64_t policy = l2_evict_first();
  float acc[NM][NH][4] = {};  // O^T tiles: dims (g, g + 8 of tile mt) x heads 8nt + 2c, 8nt + 2c + 1
  float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.0f, l_hi = 0.0f;  // heads g and g + 8
  int key0 = kbegin + warp * KSTEP;
  find_slots(key0);
  for (; key0 < kend; key0 += kWarps * KSTEP) {
    uint32_t kr[NT][NU][4], vr[2 * NT][NV][4];
#pragma unroll
    for (int i = 0; i < NT; ++i) {
#pragma unroll
      for (int u = 0; u < NU; ++u) {
        load16<kRope>(kslot[i] >= 0, kbase + kslot[i] * row_stride + 32 * u, policy, kr[i][u]);
      }
    }
#pragma unroll
    for (int r = 0; r < 2 * NT; ++r) {
#pragma unroll
      for (int w = 0; w < NV; ++w) {
        load16<kRope>(vslot[r] >= 0, vbase + vslot[r] * row_stride + 64 * w, policy, vr[r][w]);
      }
    }
    find_slots(key0 + kWarps * KSTEP);  // the next step's block ids load meanwhile

    float s[NT][4] = {}, s2[NT][4] = {};  // heads g, g + 8 x keys 8i + 2c, 8i + 2c + 1 (two mma chains)
#pragma unroll
    for (int i = 0; i < NT; ++i) {
#pragma unroll
      for (int u = 0; u < NU; ++u) {
        const uint4 qa = *reinterpret_cast<const uint4*>(&q_s[g][32 * u + 8 * c]);
        uint4 qb = make_uint4(0, 0, 0, 0);
        if constexpr (R == 16) qb = *reinterpret_cast<const uint4*>(&q_s[g + 8][32 * u + 8 * c]);
        mma_m16n8k16<T>(s[i], qa.x, qb.x, qa.y, qb.y, kr[i][u][0], kr[i][u][1]);
        mma_m16n8k16<T>(s2[i], qa.z, qb.z, qa.w, qb.w, kr[i][u][2], kr[i][u][3]);
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) s[i][e] += s2[i][e];
    }
    float mx_lo = -INFINITY, mx_hi = -INFINITY;
#pragma unroll
    for (int i = 0; i < NT; ++i) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const bool valid = key0 + 8 * i + 2 * c + e < kend;
        s[i][e] = valid ? s[i][e] * p.scale_log2 : -INFINITY;
        s[i][2 + e] = valid ? s[i][2 + e] * p.scale_log2 : -INFINITY;
        mx_lo = fmaxf(mx_lo, s[i][e]);
        mx_hi = fmaxf(mx_hi, s[i][2 + e]);
      }
    }
    // The step's first key is valid, so the new maxima are finite.
    mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 1));
    mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 2));
    const float mn_lo = fmaxf(m_lo, mx_lo), a_lo = exp2_approx(m_lo - mn_lo);
    m_lo = mn_lo;
    float mn_hi = 0.0f, a_hi = 1.0f;
    if constexpr (R == 16) {
      mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 1));
      mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 2));
      mn_hi = fmaxf(m_hi, mx_hi), a_hi = exp2_approx(m_hi - mn_hi);
      m_hi = mn_hi;
    }
    PSplit pb[NT][NH];  // P^T as T pairs (keys 8i + 2c, +1) of heads g (nt 0) and g + 8 (nt 1)
    float sum_lo = 0.0f, sum_hi = 0.0f;
#pragma unroll
    for (int i = 0; i < NT; ++i) {
      const float p0 = exp2_approx(s[i][0] - mn_lo), p1 = exp2_approx(s[i][1] - mn_lo);
      pb[i][0] = split_p<T>(p0, p1);
      sum_lo += p0 + p1;
      if constexpr (R == 16) {
        const float p2 = exp2_approx(s[i][2] - mn_hi), p3 = exp2_approx(s[i][3] - mn_hi);
        pb[i][1] = split_p<T>(p2, p3);
        sum_hi += p2 + p3;
      }
    }
    l_lo = l_lo * a_lo + sum_lo;
    l_hi = l_hi * a_hi + sum_hi;
    // acc columns are heads 2c, 2c + 1 (+ 8 nt): their rescale factors live in lanes 8c, 8c + 4.
    float a_col[NH][2];
    a_col[0][0] = __shfl_sync(0xffffffffu, a_lo, 8 * c), a_col[0][1] = __shfl_sync(0xffffffffu, a_lo, 8 * c + 4);
    if constexpr (R == 16) {
      a_col[1][0] = __shfl_sync(0xffffffffu, a_hi, 8 * c), a_col[1][1] = __shfl_sync(0xffffffffu, a_hi, 8 * c + 4);
    }
#pragma unroll
    for (int mt = 0; mt < NM; ++mt) {  // dims 64w + 8g + 2q (row g) and + 1 (row g + 8)
      const int w = mt / 4, q = mt % 4;
#pragma unroll
      for (int nt = 0; nt < NH; ++nt) {
        acc[mt][nt][0] *= a_col[nt][0], acc[mt][nt][1] *= a_col[nt][1];
        acc[mt][nt][2] *= a_col[nt][0], acc[mt][nt][3] *= a_col[nt][1];
      }
      if constexpr (NT == 1) {
        const uint32_t a0 = prmt(vr[0][w][q], vr[1][w][q], 0x5410), a1 = prmt(vr[0][w][q], vr[1][w][q], 0x7632);
#pragma unroll
        for (int nt = 0; nt < NH; ++nt) {
          mma_m16n8k8<T>(acc[mt][nt], a0, a1, pb[0][nt].big);
          mma_m16n8k8<T>(acc[mt][nt], a0, a1, pb[0][nt].small);
        }
      } else {
#pragma unroll
        for (int k = 0; k < NT / 2; ++k) {  // keys 16k .. 16k + 15
          const uint32_t a0 = prmt(vr[4 * k][w][q], vr[4 * k + 1][w][q], 0x5410);
          const uint32_t a1 = prmt(vr[4 * k][w][q], vr[4 * k + 1][w][q], 0x7632);
          const uint32_t a2 = prmt(vr[4 * k + 2][w][q], vr[4 * k + 3][w][q], 0x5410);
          const uint32_t a3 = prmt(vr[4 * k + 2][w][q], vr[4 * k + 3][w][q], 0x7632);
#pragma unroll
          for (int nt = 0; nt < NH; ++nt) {
            mma_m16n8k16<T>(acc[mt][nt], a0, a1, a2, a3, pb[2 * k][nt].big, pb[2 * k + 1][nt].big);
            mma_m16n8k16<T>(acc[mt][nt], a0, a1, a2, a3, pb[2 * k][nt].small, pb[2 * k + 1][nt].small);
          }
        }
      }
    }
  }

  // Merge the warps: each scales its acc to the CTA's maximum, then the sums go through smem.
  l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 1);
  l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 2);
  l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 1);
  l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 2);
  if (c == 0) {
    m_s[warp][g] = m_lo, l_s[warp][g] = l_lo;
    if constexpr (R == 16) m_s[warp][g + 8] = m_hi, l_s[warp][g + 8] = l_hi;
  }
  __syncthreads();
#pragma unroll
  for (int nt = 0; nt < NH; ++nt) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int h = 8 * nt + 2 * c + e;
      float cta_max = -INFINITY;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) cta_max = fmaxf(cta_max, m_s[w][h]);
      const float f = exp2_approx(m_s[warp][h] - cta_max);  // 0 for a warp without keys
#pragma unroll
      for (int mt = 0; mt < NM; ++mt) {
        const int d = 64 * (mt / 4) + 8 * g + 2 * (mt % 4);
        *reinterpret_cast<float2*>(&o_s[warp][h][d]) = make_float2(acc[mt][nt][e] * f, acc[mt][nt][2 + e] * f);
      }
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < nh * D; i += kThreads) {
    const int r = i / D, d = i % D;
    float m = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) m = fmaxf(m, m_s[w][r]);
    float l = 0.0f, o = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) l += l_s[w][r] * exp2_approx(m_s[w][r] - m), o += o_s[w][r][d];
    if (splits == 1) {
      p.out[(row0 + r) * D + d] = from_f32<T>(o / l);
    } else {
      const int64_t part = (row0 + r) * p.num_splits + split;
      p.part_acc[part * D + d] = o;
      if (d == 0) p.part_m[part] = m, p.part_l[part] = l;
    }
  }
  if (splits > 1) merge_if_last<T, D>(p, cta, row0, nh, splits, &o_s[0][0][0], kWarps * R * OP);
}

template <typename T>
__global__ void write_kv_cache_kernel(const T* __restrict__ k, const T* __restrict__ v,
                                      const int64_t* __restrict__ slot_mapping, int64_t kv_dim, T* k_cache,
                                      T* v_cache) {
  const int64_t t = blockIdx.x;
  const int64_t slot = slot_mapping[t];
  for (int64_t i = threadIdx.x; i < kv_dim; i += blockDim.x) {
    k_cache[slot * kv_dim + i] = k[t * kv_dim + i];
    v_cache[slot * kv_dim + i] = v[t * kv_dim + i];
  }
}

template <typename T, int D, int R>
void launch(const Params<T>& p, dim3 grid, cudaStream_t stream) {
  if (p.qkv != nullptr) {
    launch_pdl(attention_kernel<T, D, R, true>, grid, dim3(kThreads), 0, stream, true, p);
  } else {
    launch_pdl(attention_kernel<T, D, R, false>, grid, dim3(kThreads), 0, stream, true, p);
  }
}

// The split-KV kernel over the tokens that are not in the plan's prefill tiles (all of them
// without a plan); p's RoPE fields are set by the caller or null.
template <typename T>
void launch_split_kv(Params<T> p, const T* q, const T* k_cache, const T* v_cache, const AttentionMetadata& meta,
                     const AttentionShape& shape, int num_splits, void* workspace, T* out, cudaStream_t stream) {
  const int64_t n = meta.num_tokens, d = shape.head_dim;
  const bool tiled = meta.plan != nullptr && meta.plan_prefill_tiles > 0;
  const int64_t ctas_x = tiled ? meta.plan_decode_tokens : n;
  if (ctas_x == 0) return;
  p.tokens = tiled ? meta.plan : nullptr;
  p.q = q, p.k_cache = k_cache, p.v_cache = v_cache;
  p.positions = meta.positions, p.token_seq = meta.token_seq;
  p.indptr = meta.block_table_indptr, p.block_ids = meta.block_table_ids;
  p.num_heads = static_cast<int>(shape.num_heads), p.num_kv_heads = static_cast<int>(shape.num_kv_heads);
  p.group = p.num_heads / p.num_kv_heads;
  const int rows = p.group > 8 && d <= 128 ? 16 : 8;
  p.head_chunks = (p.group + rows - 1) / rows;
  p.block_size = static_cast<int>(shape.block_size);
  p.block_shift = (p.block_size & (p.block_size - 1)) == 0 ? __builtin_ctz(static_cast<unsigned>(p.block_size)) : -1;
  p.sliding_window = static_cast<int>(std::min<int64_t>(shape.sliding_window, INT32_MAX));
  p.num_splits = num_splits;
  p.min_split_keys = std::max(1, meta.min_split_keys);
  p.scale_log2 = shape.scale * kLog2e;
  p.out = out;
  const int64_t parts = n * shape.num_heads * num_splits;
  if (num_splits > 1) {
    p.arrivals = static_cast<int*>(workspace);
    char* partials = static_cast<char*>(workspace) + attention_split_counts_bytes(shape.num_heads);
    p.part_acc = reinterpret_cast<float*>(partials);
    p.part_m = p.part_acc + parts * d;
    p.part_l = p.part_m + parts;
  }
  const int64_t heads_y = shape.num_kv_heads * p.head_chunks;
  TESSERA_CHECK(heads_y <= 65535);
  // A token's KV heads side by side in the grid, so that the CTAs running at once read
  // whole blocks of the cache (a slot holds every KV head's row) rather than one head's
  // 256-byte rows 2 KB apart (docs/benchmarks.md, "Decode attention's grid order").
  p.heads_fastest = ctas_x <= 65535;
  const dim3 grid = p.heads_fastest
                        ? dim3(static_cast<unsigned>(heads_y), static_cast<unsigned>(ctas_x), num_splits)
                        : dim3(static_cast<unsigned>(ctas_x), static_cast<unsigned>(heads_y), num_splits);
  if (d == 64) {
    rows == 16 ? launch<T, 64, 16>(p, grid, stream) : launch<T, 64, 8>(p, grid, stream);
  } else if (d == 128) {
    rows == 16 ? launch<T, 128, 16>(p, grid, stream) : launch<T, 128, 8>(p, grid, stream);
  } else {
    launch<T, 256, 8>(p, grid, stream);
  }
}

// Checks and clamps num_splits; false: head_dim takes the any-head-dim kernel.
bool split_kv_shape(const AttentionMetadata& meta, const AttentionShape& shape, int& num_splits, void* workspace) {
  const int64_t n = meta.num_tokens, d = shape.head_dim;
  TESSERA_CHECK_MSG(shape.num_kv_heads > 0 && shape.num_heads % shape.num_kv_heads == 0,
                    "num_heads must be a multiple of num_kv_heads");
  if (d != 64 && d != 128 && d != 256) {
    TESSERA_CHECK_MSG(d % 2 == 0 && d <= 256, "paged_attention supports even head_dim up to 256");
    return false;
  }
  TESSERA_CHECK_MSG(num_splits >= 1 && num_splits <= 65535, "num_splits out of range");
  if (n > kAttentionSplitMaxTokens) num_splits = 1;  // no room for their arrival counts
  TESSERA_CHECK_MSG(num_splits == 1 || workspace != nullptr, "num_splits > 1 needs attention_workspace_bytes");
  TESSERA_CHECK(shape.block_size > 0 && n <= INT32_MAX);
  return true;
}

}  // namespace

template <typename T>
void write_kv_cache(const T* k, const T* v, const AttentionMetadata& meta, int64_t kv_dim, T* k_cache, T* v_cache,
                    cudaStream_t stream) {
  if (meta.num_tokens == 0) return;
  write_kv_cache_kernel<T><<<static_cast<unsigned>(meta.num_tokens), 128, 0, stream>>>(k, v, meta.slot_mapping, kv_dim,
                                                                                    k_cache, v_cache);
}

template <typename T>
void paged_attention(const T* q, const T* k_cache, const T* v_cache, const AttentionMetadata& meta,
                     const AttentionShape& shape, int num_splits, void* workspace, T* out, cudaStream_t stream) {
  if (meta.num_tokens == 0) return;
  if (!split_kv_shape(meta, shape, num_splits, workspace)) {
    paged_attention_any_head_dim(q, k_cache, v_cache, meta, shape, out, stream);
    return;
  }
  // A plan with prefill tiles: those first, then the split-KV kernel over the plan's other tokens.
  if (meta.plan != nullptr && meta.plan_prefill_tiles > 0) {
    detail::attention_prefill(q, k_cache, v_cache, meta, shape, out, stream);
  }
  launch_split_kv(Params<T>{}, q, k_cache, v_cache, meta, shape, num_splits, workspace, out, stream);
}

template <typename T>
void rope_paged_attention(const T* qkv, const QkvRope<T>& rope, const AttentionMetadata& meta,
                          const AttentionShape& shape, int num_splits, void* workspace, T* q_out, T* k_cache,
                          T* v_cache, T* out, cudaStream_t stream) {
  const int64_t n = meta.num_tokens;
  if (n == 0) return;
  const auto aligned = [](const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool fused = meta.rope_in_attention && split_kv_shape(meta, shape, num_splits, workspace) &&
                     !(meta.plan != nullptr && meta.plan_prefill_tiles > 0) && aligned(qkv) && aligned(rope.bias) &&
                     aligned(rope.q_norm) && aligned(rope.k_norm) && aligned(k_cache) && aligned(v_cache);
  if (!fused) {
    qkv_rope_cache(qkv, rope.bias, rope.q_norm, rope.k_norm, rope.eps, meta.positions, meta.slot_mapping, n,
                   shape.num_heads, shape.num_kv_heads, shape.head_dim, rope.inv_freq, rope.layout, q_out, k_cache,
                   v_cache, stream);
    paged_attention(q_out, k_cache, v_cache, meta, shape, num_splits, workspace, out, stream);
    return;
  }
  Params<T> p{};
  p.qkv = qkv, p.qkv_bias = rope.bias, p.q_norm = rope.q_norm, p.k_norm = rope.k_norm;
  p.inv_freq = rope.inv_freq, p.slot_mapping = meta.slot_mapping;
  p.k_cache_out = k_cache, p.v_cache_out = v_cache;
  p.eps = rope.eps, p.interleaved = rope.layout == RopeLayout::kInterleaved;
  launch_split_kv<T>(p, nullptr, k_cache, v_cache, meta, shape, num_splits, workspace, out, stream);
}

#define TESSERA_INSTANTIATE(T)                                                                                   \
  template void write_kv_cache<T>(const T*, const T*, const AttentionMetadata&, int64_t, T*, T*, cudaStream_t);  \
  template void paged_attention<T>(const T*, const T*, const T*, const AttentionMetadata&, const AttentionShape&, \
                                   int, void*, T*, cudaStream_t);                                                \
  template void rope_paged_attention<T>(const T*, const QkvRope<T>&, const AttentionMetadata&,                   \
                                        const AttentionShape&, int, void*, T*, T*, T*, T*, cudaStream_t);
TESSERA_FOR_EACH_ELEM(TESSERA_INSTANTIATE)
#undef TESSERA_INSTANTIATE

}  // namespace tessera::cuda
