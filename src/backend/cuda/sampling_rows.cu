// Per-row sampling (sample_rows) and top-k logprobs (top_logprobs): one block of 1024
// threads per row, no sort. Every cut is a threshold on the 64-bit key
//   composite(token) = order_key(logit) << 32 | ~id   (larger logit first, then lower id),
// found by radix select: up to 6 passes of 11/11/10 bits (the logit's key, then the id's only
// when the logit ties at the boundary), each a shared-memory histogram of counts (top-k) or of
// fixed-point e^a masses (top-p) over the tokens still in the running, then a block-wide
// suffix scan that picks the largest digit whose kept measure reaches the target. A select
// stops as soon as its bucket holds one token.
//
// sample_rows, per row:
//   P0 (global): max and argmax (lowest id); fused top-k pass 0 histogram; vocab <= kCap: the
//     whole row is copied to shared memory.
//   temperature <= 0: the argmax alone, in a pass of its own; non-finite max: argmax, done.
//   top-k (0 < k < vocab): count select for the k-th composite key.
//   top-p (< 1): mass select over the survivors of top-k and min-p ((l - max) / T >=
//     log(min_p)), target ceil(top_p * their mass).
//   final: Gumbel race over the kept tokens, argmax of a - log(E_i), lower id on ties; a token
//     with a + kMaxGumbelNoise below the thread's best so far cannot win and draws nothing.
// Whenever the tokens that can still be kept number at most kCap, the next pass over the row
// in global memory also copies them (key, id) to shared memory and later passes read those
// only: typical top-k / top-p rows read the row 2-3 times.
//
// Must not be compiled with --use_fast_math (the CPU twin matches expf/logf/log1pf to ulps).
#include <cstdint>

#include "backend/cuda/pdl.h"
#include "backend/cuda/sampling.h"

namespace tessera::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kBins = 2048;  // 11-bit digits; each thread scans 2
constexpr int kCap = 2560;   // candidates held in shared memory
constexpr int kPasses = 6;

static_assert(kBins == 2 * kThreads, "choose_digit gives each thread two bins");

using u64 = unsigned long long;

struct Smem {
  uint32_t cnt[kBins];
  u64 mass[kBins];
  uint32_t cand_key[kCap];
  int32_t cand_idx[kCap];
  uint32_t warp_cnt[kWarps];
  u64 warp_mass[kWarps];
  float red_v[kWarps];
  float red_s[kWarps];
  int32_t red_i[kWarps];
  int n_cand;
  int digit;
  uint32_t bucket_cnt;
  uint32_t above_cnt;
  u64 above_mass;
};

// Pass p decides bits [shift, shift + bits) of the composite key.
__device__ __forceinline__ int pass_shift(int p) {
  switch (p) {
    case 0: return 53;
    case 1: return 42;
    case 2: return 32;
    case 3: return 21;
    case 4: return 10;
    default: return 0;
  }
}
__device__ __forceinline__ int pass_bits(int p) { return (p == 2 || p == 5) ? 10 : 11; }
// The bits decided before pass p.
__device__ __forceinline__ uint64_t decided_mask(int p) {
  const int top = pass_shift(p) + pass_bits(p);
  return top >= 64 ? 0 : ~((uint64_t{1} << top) - 1);
}

// Where a pass reads the row: global memory, or the candidates copied to shared memory.
struct Source {
  bool in_smem = false;
  int n = 0;
};

// A 16-byte-aligned row of n4 float4s: four(v, j) for this thread's float4s j in rising
// order, kBatch loads in flight: one block reads a whole row, so a pass costs its L2 round
// trips (a 128K-token row: 4 instead of 32).
template <typename F>
__device__ __forceinline__ void for_each_float4(const float4* __restrict__ row4, int64_t n4, F&& four) {
  constexpr int kBatch = 8;
  int64_t j = threadIdx.x;
  for (; j + (kBatch - 1) * kThreads < n4; j += kBatch * kThreads) {
    float4 v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) v[u] = row4[j + u * kThreads];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) four(v[u], j + u * kThreads);
  }
  for (; j < n4; j += kThreads) four(row4[j], j);
}

__device__ __forceinline__ bool float4_rows(const float* row, int64_t vocab) {
  return (vocab & 3) == 0 && (reinterpret_cast<uintptr_t>(row) & 15) == 0;
}

// f(logit, order key, id) for every token of the source (sanitized logits).
template <typename F>
__device__ __forceinline__ void visit(const float* __restrict__ row, int64_t vocab, const Smem& s, const Source& src,
                                      F&& f) {
  if (src.in_smem) {
    for (int j = threadIdx.x; j < src.n; j += kThreads) {
      const uint32_t key = s.cand_key[j];
      f(float_from_order_key(key), key, s.cand_idx[j]);
    }
    return;
  }
  auto one = [&](float x, int64_t i) {
    const float l = sanitize_logit(x);
    f(l, float_order_key(l), static_cast<int32_t>(i));
  };
  if (float4_rows(row, vocab)) {
    for_each_float4(reinterpret_cast<const float4*>(row), vocab / 4, [&](const float4& v, int64_t j) {
      one(v.x, 4 * j);
      one(v.y, 4 * j + 1);
      one(v.z, 4 * j + 2);
      one(v.w, 4 * j + 3);
    });
  } else {
    for (int64_t i = threadIdx.x; i < vocab; i += kThreads) one(row[i], i);
  }
}

// This thread's (largest sanitized logit, its lowest id) over its share of the row, as P0's
// argmax (NaN counts as -inf; a row of -inf / NaN leaves vi unset: token 0). The 16-byte path
// takes a float4's max with three fmaxf (NaN-ignoring) and looks for the id only when it beats
// the best so far (ids rise through a thread's share, so ties keep the lowest): ~1 instruction
// per token instead of P0's ~12, which bound a one-block pass over a 128K-token row.
__device__ __forceinline__ void greedy_argmax(const float* __restrict__ row, int64_t vocab, float& v, int32_t& vi) {
  if (float4_rows(row, vocab)) {
    for_each_float4(reinterpret_cast<const float4*>(row), vocab / 4, [&](const float4& x, int64_t j) {
      const float m = fmaxf(fmaxf(x.x, x.y), fmaxf(x.z, x.w));
      if (!(m > v)) return;
      v = m;
      vi = static_cast<int32_t>(4 * j + (x.x == m ? 0 : x.y == m ? 1 : x.z == m ? 2 : 3));
    });
    return;
  }
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    const float l = sanitize_logit(row[i]);
    if (l > v) v = l, vi = static_cast<int32_t>(i);
  }
}

// Which tokens are in the running: composite >= min_comp and, with min-p, a >= log(min_p).
struct Filter {
  uint64_t min_comp = 0;
  bool use_minp = false;
  bool need_a = false;  // compute a = (l - max) / T
  float log_minp = 0.0f;
  float max = 0.0f;
  float temperature = 1.0f;
  __device__ __forceinline__ bool operator()(float l, uint64_t comp, float& a) const {
    if (comp < min_comp) return false;
    a = need_a ? sampling_scaled(l, max, temperature) : 0.0f;
    return !use_minp || a >= log_minp;
  }
};

// The block's best (v, i): larger v, then lower i. Every thread gets the result.
__device__ void block_argmax(Smem& s, float& v, int32_t& i) {
  for (int off = 16; off > 0; off /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, off);
    const int32_t oi = __shfl_xor_sync(0xffffffffu, i, off);
    if (ov > v || (ov == v && oi < i)) v = ov, i = oi;
  }
  __syncthreads();  // earlier readers of red_* are done
  if ((threadIdx.x & 31) == 0) s.red_v[threadIdx.x / 32] = v, s.red_i[threadIdx.x / 32] = i;
  __syncthreads();
  v = s.red_v[0];
  i = s.red_i[0];
  for (int w = 1; w < kWarps; ++w) {
    if (s.red_v[w] > v || (s.red_v[w] == v && s.red_i[w] < i)) v = s.red_v[w], i = s.red_i[w];
  }
}

// Adds (om, os) = (max, sum e^(x - max)) of some values into (m, sum).
__device__ __forceinline__ void merge_lse(float& m, float& sum, float om, float os) {
  if (om > m) {
    const float t = m, ts = sum;
    m = om, sum = os, om = t, os = ts;
  }
  if (om != -INFINITY) sum += os * expf(om - m);
}

struct Choice {
  int digit;
  uint32_t bucket_cnt;  // tokens in the chosen bucket
  uint32_t above_cnt;   // tokens above it (this and earlier passes)
  u64 above_mass;
  u64 target;
};

// Over the histogram of this pass: the largest digit d with above + S(d) >= target, S(d) the
// measure (count, or mass when by_mass) of buckets >= d. With derive_target (the first mass
// pass) the target is top_p_target(top_p, total mass) first. Integer sums: exact.
__device__ Choice choose_digit(Smem& s, bool by_mass, uint32_t above_cnt, u64 above_mass, u64 target,
                               bool derive_target, float top_p) {
  const int t = threadIdx.x, lane = t & 31, warp = t / 32;
  const uint32_t c0 = s.cnt[2 * t], c1 = s.cnt[2 * t + 1];
  const u64 m0 = by_mass ? s.mass[2 * t] : 0, m1 = by_mass ? s.mass[2 * t + 1] : 0;
  uint32_t xc = c0 + c1;
  u64 xm = m0 + m1;
  for (int off = 1; off < 32; off *= 2) {  // inclusive suffix sums within the warp
    const uint32_t yc = __shfl_down_sync(0xffffffffu, xc, off);
    const u64 ym = __shfl_down_sync(0xffffffffu, xm, off);
    if (lane + off < 32) xc += yc, xm += ym;
  }
  if (t == 0) {  // a fallback that keeps the whole region (not reached: the sums are exact)
    s.digit = 0;
    s.bucket_cnt = 0;
    s.above_cnt = above_cnt;
    s.above_mass = above_mass;
  }
  if (lane == 0) s.warp_cnt[warp] = xc, s.warp_mass[warp] = xm;
  __syncthreads();
  uint32_t wc = 0;
  u64 wm = 0;
  for (int w = warp + 1; w < kWarps; ++w) wc += s.warp_cnt[w], wm += s.warp_mass[w];
  if (derive_target) {
    u64 total = 0;
    for (int w = 0; w < kWarps; ++w) total += s.warp_mass[w];
    target = top_p_target(top_p, total);
  }
  const uint32_t s2c = wc + xc - c0 - c1, s1c = s2c + c1, s0c = s1c + c0;  // bins >= 2t+2, 2t+1, 2t
  const u64 s2m = wm + xm - m0 - m1, s1m = s2m + m1, s0m = s1m + m0;
  auto meets = [&](uint32_t sc, u64 sm) {
    return by_mass ? above_mass + sm >= target : static_cast<u64>(above_cnt) + sc >= target;
  };
  const bool ok0 = meets(s0c, s0m), ok1 = meets(s1c, s1m), ok2 = meets(s2c, s2m);
  if (ok1 && !ok2) {
    s.digit = 2 * t + 1, s.bucket_cnt = c1, s.above_cnt = above_cnt + s2c, s.above_mass = above_mass + s2m;
  } else if (ok0 && !ok1) {
    s.digit = 2 * t, s.bucket_cnt = c0, s.above_cnt = above_cnt + s1c, s.above_mass = above_mass + s1m;
  }
  __syncthreads();
  return Choice{s.digit, s.bucket_cnt, s.above_cnt, s.above_mass, target};
}

// Histogram of pass p over the tokens in the running whose decided bits equal prefix; with
// gather, also copies every token in the running with composite >= prefix to shared memory
// (the caller knows they fit) and the source becomes that copy.
template <typename Filt>
__device__ void hist_pass(const float* row, int64_t vocab, Smem& s, Source& src, const Filt& filter, bool by_mass,
                          int p, uint64_t prefix, bool gather) {
  for (int b = threadIdx.x; b < kBins; b += kThreads) {
    s.cnt[b] = 0;
    if (by_mass) s.mass[b] = 0;
  }
  if (gather && threadIdx.x == 0) s.n_cand = 0;
  __syncthreads();
  const int shift = pass_shift(p);
  const uint32_t dmask = (1u << pass_bits(p)) - 1;
  const uint64_t mask = decided_mask(p);
  visit(row, vocab, s, src, [&](float l, uint32_t key, int32_t idx) {
    const uint64_t comp = sampling_composite(key, idx);
    float a;
    if (!filter(l, comp, a)) return;
    if (gather && comp >= prefix) {
      const int slot = atomicAdd(&s.n_cand, 1);
      if (slot < kCap) s.cand_key[slot] = key, s.cand_idx[slot] = idx;
    }
    if ((comp & mask) == prefix) {
      const uint32_t d = static_cast<uint32_t>(comp >> shift) & dmask;
      atomicAdd(&s.cnt[d], 1u);
      if (by_mass) atomicAdd(&s.mass[d], static_cast<u64>(mass_fixed(a)));
    }
  });
  __syncthreads();
  if (gather) {
    src.in_smem = true;
    src.n = min(s.n_cand, kCap);
  }
}

// The largest threshold tau with measure({in the running, composite >= tau}) >= target
// (count, or fixed-point mass with target top_p_target(top_p, total)). pass0_done: the
// caller built pass 0's histogram. region: an upper bound on the tokens in the running.
template <typename Filt>
__device__ uint64_t radix_select(const float* row, int64_t vocab, Smem& s, Source& src, const Filt& filter,
                                 bool by_mass, u64 target, float top_p, bool pass0_done, uint32_t region) {
  uint64_t prefix = 0;
  uint32_t above_cnt = 0;
  u64 above_mass = 0;
  for (int p = 0; p < kPasses; ++p) {
    if (p > 0 || !pass0_done) {
      hist_pass(row, vocab, s, src, filter, by_mass, p, prefix, !src.in_smem && region <= kCap);
    }
    const Choice c = choose_digit(s, by_mass, above_cnt, above_mass, target, by_mass && p == 0, top_p);
    target = c.target;
    prefix |= static_cast<uint64_t>(c.digit) << pass_shift(p);
    above_cnt = c.above_cnt;
    above_mass = c.above_mass;
    region = above_cnt + c.bucket_cnt;
    if (c.bucket_cnt <= 1) break;  // the one token left in the bucket is in: prefix is the threshold
  }
  return prefix;
}

__global__ void __launch_bounds__(kThreads, 1)
    sample_rows_kernel(const float* __restrict__ logits, int64_t vocab, const SamplingRow* __restrict__ rows,
                       int32_t* __restrict__ next) {
  __shared__ Smem s;
  pdl_wait();  // launched with PDL (pdl.h)
  pdl_launch_dependents();
  const SamplingRow p = rows[blockIdx.x];
  const float* row = logits + static_cast<int64_t>(blockIdx.x) * vocab;
  const float T = p.temperature;
  const bool sampled = T > 0.0f;
  const bool use_topk = sampled && p.top_k > 0 && p.top_k < vocab;
  const bool gather0 = sampled && vocab <= kCap;
  if (use_topk) {
    for (int b = threadIdx.x; b < kBins; b += kThreads) s.cnt[b] = 0;
  }
  if (threadIdx.x == 0) s.n_cand = 0;
  __syncthreads();
  if (!sampled) {  // greedy: the argmax alone, in a pass of its own
    float v = -INFINITY;
    int32_t vi = INT32_MAX;
    greedy_argmax(row, vocab, v, vi);
    block_argmax(s, v, vi);
    if (threadIdx.x == 0) next[blockIdx.x] = vi == INT32_MAX ? 0 : vi;
    return;
  }
  // P0: max / argmax, top-k pass 0 (digit = the key's top 11 bits), small rows copied.
  float v = -INFINITY;
  int32_t vi = INT32_MAX;
  visit(row, vocab, s, Source{}, [&](float l, uint32_t key, int32_t idx) {
    if (l > v || (l == v && idx < vi)) v = l, vi = idx;
    if (use_topk) atomicAdd(&s.cnt[key >> 21], 1u);
    if (gather0) {
      const int slot = atomicAdd(&s.n_cand, 1);
      s.cand_key[slot] = key, s.cand_idx[slot] = idx;
    }
  });
  block_argmax(s, v, vi);  // its barriers also publish the histogram and the copy
  const float max = v;
  const int32_t arg = vi == INT32_MAX ? 0 : vi;
  if (!sampled || !isfinite(max)) {
    if (threadIdx.x == 0) next[blockIdx.x] = arg;
    return;
  }
  Source src;
  if (gather0) src.in_smem = true, src.n = s.n_cand;
  Filter f;
  f.max = max;
  f.temperature = T;
  f.use_minp = p.min_p > 0.0f;
  f.log_minp = f.use_minp ? tessera_logf(p.min_p) : 0.0f;
  uint32_t region = static_cast<uint32_t>(vocab);
  if (use_topk) {
    const Filter all;  // top-k ranks every token
    f.min_comp = radix_select(row, vocab, s, src, all, false, static_cast<u64>(p.top_k), -1.0f, true, region);
    region = static_cast<uint32_t>(p.top_k);
  }
  f.need_a = true;
  if (p.top_p < 1.0f) {
    const uint64_t tau = radix_select(row, vocab, s, src, f, true, 0, p.top_p, false, region);
    if (tau > f.min_comp) f.min_comp = tau;
  }
  // The Gumbel race; the best token (always kept) is every thread's first contender.
  const uint64_t key = counter_rng_key(p.seed, p.offset);
  float best = gumbel_score(0.0f, key, arg);
  int32_t best_i = arg;
  visit(row, vocab, s, src, [&](float l, uint32_t k32, int32_t idx) {
    float a;
    if (!f(l, sampling_composite(k32, idx), a)) return;
    if (a + kMaxGumbelNoise < best) return;  // a - log(E) <= a + kMaxGumbelNoise: cannot win
    const float score = gumbel_score(a, key, idx);
    if (score > best || (score == best && idx < best_i)) best = score, best_i = idx;
  });
  block_argmax(s, best, best_i);
  if (threadIdx.x == 0) next[blockIdx.x] = best_i;
}

__global__ void __launch_bounds__(kThreads, 1)
    top_logprobs_kernel(const float* __restrict__ logits, int64_t vocab, int k, const int32_t* __restrict__ chosen,
                        int32_t* __restrict__ top_ids, float* __restrict__ top_lp, float* __restrict__ chosen_lp) {
  __shared__ Smem s;
  __shared__ uint64_t top_comp[kMaxTopLogprobs];
  __shared__ int top_n;
  pdl_wait();  // launched with PDL (pdl.h)
  pdl_launch_dependents();
  const float* row = logits + static_cast<int64_t>(blockIdx.x) * vocab;
  int64_t kk64 = k < vocab ? k : vocab;
  if (kk64 > kMaxTopLogprobs) kk64 = kMaxTopLogprobs;
  const int kk = static_cast<int>(kk64);
  const bool select = kk > 0 && kk < vocab;
  const bool gather0 = kk > 0 && vocab <= kCap;
  if (select) {
    for (int b = threadIdx.x; b < kBins; b += kThreads) s.cnt[b] = 0;
  }
  if (threadIdx.x == 0) s.n_cand = 0, top_n = 0;
  __syncthreads();
  // P0: online max and sum e^(l - max); top-k pass 0; small rows copied.
  float m = -INFINITY, sum = 0.0f;
  visit(row, vocab, s, Source{}, [&](float l, uint32_t key, int32_t idx) {
    if (l != -INFINITY) {
      if (l > m) {
        sum = sum * expf(m - l) + 1.0f;
        m = l;
      } else {
        sum += expf(l - m);
      }
    }
    if (select) atomicAdd(&s.cnt[key >> 21], 1u);
    if (gather0) {
      const int slot = atomicAdd(&s.n_cand, 1);
      s.cand_key[slot] = key, s.cand_idx[slot] = idx;
    }
  });
  for (int off = 16; off > 0; off /= 2) {
    merge_lse(m, sum, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, sum, off));
  }
  if ((threadIdx.x & 31) == 0) s.red_v[threadIdx.x / 32] = m, s.red_s[threadIdx.x / 32] = sum;
  __syncthreads();
  m = s.red_v[0];
  sum = s.red_s[0];
  for (int w = 1; w < kWarps; ++w) merge_lse(m, sum, s.red_v[w], s.red_s[w]);
  const float lse = m + logf(sum);
  if (threadIdx.x == 0 && chosen != nullptr && chosen_lp != nullptr) {
    const int32_t c = chosen[blockIdx.x];
    chosen_lp[blockIdx.x] = (c >= 0 && c < vocab) ? sanitize_logit(row[c]) - lse : -INFINITY;
  }
  if (k <= 0) return;
  Source src;
  if (gather0) src.in_smem = true, src.n = s.n_cand;
  uint64_t tau = 0;
  if (select) {
    const Filter all;
    tau = radix_select(row, vocab, s, src, all, false, static_cast<u64>(kk), -1.0f, true, static_cast<uint32_t>(vocab));
  }
  // Exactly kk tokens have composite >= tau.
  visit(row, vocab, s, src, [&](float, uint32_t key, int32_t idx) {
    const uint64_t c = sampling_composite(key, idx);
    if (c >= tau) {
      const int slot = atomicAdd(&top_n, 1);
      if (slot < kMaxTopLogprobs) top_comp[slot] = c;
    }
  });
  __syncthreads();
  if (threadIdx.x == 0) {
    const int got = top_n < kk ? top_n : kk;
    for (int a = 1; a < got; ++a) {  // insertion sort, best first
      const uint64_t c = top_comp[a];
      int b = a;
      for (; b > 0 && top_comp[b - 1] < c; --b) top_comp[b] = top_comp[b - 1];
      top_comp[b] = c;
    }
    int32_t* ids = top_ids + static_cast<int64_t>(blockIdx.x) * k;
    float* lps = top_lp + static_cast<int64_t>(blockIdx.x) * k;
    for (int j = 0; j < k; ++j) {
      if (j < got) {
        ids[j] = static_cast<int32_t>(~static_cast<uint32_t>(top_comp[j]));
        lps[j] = float_from_order_key(static_cast<uint32_t>(top_comp[j] >> 32)) - lse;
      } else {
        ids[j] = -1;
        lps[j] = -INFINITY;
      }
    }
  }
}

__global__ void apply_logit_adjustments_kernel(float* __restrict__ logits, int64_t vocab,
                                               const int32_t* __restrict__ indptr,
                                               const LogitAdjustment* __restrict__ adjustments) {
  pdl_wait();  // launched with PDL (pdl.h)
  pdl_launch_dependents();
  const int64_t r = blockIdx.x;
  float* row = logits + r * vocab;
  for (int32_t e = indptr[r] + static_cast<int32_t>(threadIdx.x); e < indptr[r + 1]; e += blockDim.x) {
    const LogitAdjustment a = adjustments[e];
    row[a.token] = adjust_logit(row[a.token], a);
  }
}

__global__ void apply_token_bitmask_kernel(float* __restrict__ logits, int64_t vocab,
                                           const int32_t* __restrict__ mask_rows, const uint32_t* __restrict__ bitmask,
                                           int64_t words) {
  pdl_wait();  // launched with PDL (pdl.h)
  pdl_launch_dependents();
  const int64_t r = blockIdx.x;
  const int32_t m = mask_rows[r];
  if (m < 0) return;
  float* row = logits + r * vocab;
  const uint32_t* bits = bitmask + static_cast<int64_t>(m) * words;
  for (int64_t w = threadIdx.x; w < words; w += blockDim.x) {
    const uint32_t b = bits[w];
    if (b == 0xffffffffu) continue;
    const int64_t t0 = w * 32;
    for (int k = 0; k < 32 && t0 + k < vocab; ++k) {
      if (!((b >> k) & 1u)) row[t0 + k] = -INFINITY;
    }
  }
}

__global__ void feed_sampled_tokens_kernel(int32_t* __restrict__ token_ids, const int32_t* __restrict__ sampled,
                                           const int32_t* __restrict__ pairs, int64_t n) {
  const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) token_ids[pairs[2 * i]] = sampled[pairs[2 * i + 1]];
}

}  // namespace

void apply_logit_adjustments(float* logits, int64_t n, int64_t vocab, const int32_t* indptr,
                             const LogitAdjustment* adjustments, cudaStream_t stream) {
  if (n <= 0) return;
  launch_pdl(apply_logit_adjustments_kernel, dim3(static_cast<unsigned>(n)), dim3(128), 0, stream, true, logits, vocab,
             indptr, adjustments);
}

void apply_token_bitmask(float* logits, int64_t n, int64_t vocab, const int32_t* mask_rows, const uint32_t* bitmask,
                         cudaStream_t stream) {
  if (n <= 0 || vocab <= 0) return;
  launch_pdl(apply_token_bitmask_kernel, dim3(static_cast<unsigned>(n)), dim3(256), 0, stream, true, logits, vocab,
             mask_rows, bitmask, (vocab + 31) / 32);
}

void feed_sampled_tokens(int32_t* token_ids, const int32_t* sampled, const int32_t* pairs, int64_t n,
                         cudaStream_t stream) {
  if (n <= 0) return;
  constexpr int kBlock = 256;
  feed_sampled_tokens_kernel<<<static_cast<unsigned>((n + kBlock - 1) / kBlock), kBlock, 0, stream>>>(
      token_ids, sampled, pairs, n);
}

void sample_rows(const float* logits, int64_t n, int64_t vocab, const SamplingRow* rows, int32_t* next,
                 cudaStream_t stream) {
  if (n <= 0 || vocab <= 0) return;
  launch_pdl(sample_rows_kernel, dim3(static_cast<unsigned>(n)), dim3(kThreads), 0, stream, true, logits, vocab, rows,
             next);
}

void top_logprobs(const float* logits, int64_t n, int64_t vocab, int k, const int32_t* chosen, int32_t* top_ids,
                  float* top_logprobs, float* chosen_logprob, cudaStream_t stream) {
  if (n <= 0 || vocab <= 0 || k < 0) return;
  if (k == 0 && (chosen == nullptr || chosen_logprob == nullptr)) return;
  launch_pdl(top_logprobs_kernel, dim3(static_cast<unsigned>(n)), dim3(kThreads), 0, stream, true, logits, vocab, k,
             chosen, top_ids, top_logprobs, chosen_logprob);
}

}  // namespace tessera::cuda
