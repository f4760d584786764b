// Device building blocks of the fused decode GEMVs (gemv.cu): the kernels' parameters, the
// x source with its RMSNorm prologue, the MMA step, and the epilogues, templated on the
// 16-bit element type T (elem.cuh). Included by gemv_kernels.cuh only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/elem.cuh"
#include "backend/cuda/gemv.h"

namespace tessera::cuda::gemv_detail {

constexpr int kGroups = 2;                            // 8-row weight groups per CTA
constexpr int kChunks = 2;                            // 16-byte pieces per lane, group and step
constexpr int kStepK = kChunks * 32;                  // columns per step (4 lanes x 8, twice)
constexpr int kStageBytes = kGroups * kChunks * 512;  // one warp's step of weights

enum class Epi { kElem, kF32, kAdd, kSiluMul };  // T out, fp32 out, residual add, silu * up

template <typename T>
struct Params {
  const T* x;
  const int32_t* rows;
  const T* norm;
  float eps;
  const T* w;
  int n;
  int64_t k;
  int64_t m;  // output columns (gemv_silu_mul: inter)
  void* out;
};

__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

// 16 bytes global -> shared, bypassing L1; src_bytes 0 writes zeros and reads nothing.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes, uint64_t policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes), "l"(policy)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ uint4 lds128(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}

template <typename T>
__device__ __forceinline__ uint4 ldg128(const T* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}

__device__ __forceinline__ uint32_t word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// The MMAs: d += A . B for A 16x16 (row-major fragment a0..a3), B 16x8 (col-major b0, b1),
// T in: mma_m16n8k16<T> (elem.cuh).

// T pair x (low element first) times the norm weights nw, rounded once to a T pair (the
// products of 16-bit values are exact in fp32, so this equals multiplying in fp32 and
// rounding).
template <typename T>
__device__ __forceinline__ uint32_t norm_pair(uint32_t x, uint32_t nw) {
  return mul_x2<T>(x, nw);
}

// Adds the squares of a T pair (low element first) to ss.
template <typename T>
__device__ __forceinline__ void add_squares(uint32_t x, float& ss) {
  float x0, x1;
  if constexpr (ElemTraits<T>::kIsHalf) {
    const float2 f = to_f32x2(*reinterpret_cast<const elem_x2<T>*>(&x));
    x0 = f.x, x1 = f.y;
  } else {  // a bf16 is the high half of its fp32
    x0 = __uint_as_float(x << 16), x1 = __uint_as_float(x & 0xffff0000u);
  }
  ss = fmaf(x0, x0, ss);
  ss = fmaf(x1, x1, ss);
}

// One step's x (and norm weights) of a lane: [token half][chunk].
struct XStep {
  uint4 x[2][kChunks];
  uint4 nw[kChunks];
};

// A lane's inputs: rows g and g + 8 of x (through p.rows when given) and the norm weights,
// at its 8 columns c * 8 of each 32; read after pdl_wait (earlier kernels write them).
template <typename T, bool kNorm, bool kTok16>
struct XSource {
  const T* x0 = nullptr;
  const T* x1 = nullptr;
  const T* nrm = nullptr;
  int64_t k;
  int c;

  __device__ XSource(const Params<T>& p, int g, int c_) : k(p.k), c(c_) {
    if (g < p.n) x0 = p.x + static_cast<int64_t>(p.rows != nullptr ? p.rows[g] : g) * k + c * 8;
    if (kTok16 && g + 8 < p.n) x1 = p.x + static_cast<int64_t>(p.rows != nullptr ? p.rows[g + 8] : g + 8) * k + c * 8;
    if (kNorm) nrm = p.norm + c * 8;
  }

  // The step of kStepK columns at k0 (zeros past k and for missing rows).
  __device__ void load(int64_t k0, XStep& st) const {
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      const int64_t off = k0 + j * 32;
      const bool valid = off + c * 8 < k;
      st.x[0][j] = valid && x0 != nullptr ? ldg128(x0 + off) : make_uint4(0, 0, 0, 0);
      if constexpr (kTok16) st.x[1][j] = valid && x1 != nullptr ? ldg128(x1 + off) : make_uint4(0, 0, 0, 0);
      if constexpr (kNorm) st.nw[j] = valid ? ldg128(nrm + off) : make_uint4(0, 0, 0, 0);
    }
  }

  // The same for k % 64 == 0 and k0 % 64 == 0 (the bulk kernel): a step lies wholly inside
  // or past k, so one bound check, in 32-bit arithmetic (k < 2^31 columns).
  __device__ void load_block(int k0, XStep& st) const {
    const bool valid = k0 < static_cast<int>(k);
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      const int off = k0 + j * 32;
      st.x[0][j] = valid && x0 != nullptr ? ldg128(x0 + off) : make_uint4(0, 0, 0, 0);
      if constexpr (kTok16) st.x[1][j] = valid && x1 != nullptr ? ldg128(x1 + off) : make_uint4(0, 0, 0, 0);
      if constexpr (kNorm) st.nw[j] = valid ? ldg128(nrm + off) : make_uint4(0, 0, 0, 0);
    }
  }
};

// One step of a warp: the MMAs of its weights wv ([group][chunk], 16 bytes per lane) with
// the x (and norm weights) of the step; with the norm and squares set, sums x^2 into ss (the
// bulk kernel needs them once per CTA: every tile of it sees the same x).
template <typename T, bool kNorm, bool kTok16>
__device__ __forceinline__ void mma_step(float (&acc)[kGroups][4], float (&ss)[2], const XStep& cur,
                                         const uint4 (&wv)[kGroups][kChunks], bool squares = true) {
  uint32_t a[2][kChunks][4];  // [token half][chunk][column pair]
#pragma unroll
  for (int j = 0; j < kChunks; ++j) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      if constexpr (kNorm) {
        if (squares) {
          add_squares<T>(word(cur.x[0][j], q), ss[0]);
          if constexpr (kTok16) add_squares<T>(word(cur.x[1][j], q), ss[1]);
        }
        a[0][j][q] = norm_pair<T>(word(cur.x[0][j], q), word(cur.nw[j], q));
        a[1][j][q] = kTok16 ? norm_pair<T>(word(cur.x[1][j], q), word(cur.nw[j], q)) : 0u;
      } else {
        a[0][j][q] = word(cur.x[0][j], q);
        a[1][j][q] = kTok16 ? word(cur.x[1][j], q) : 0u;
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kChunks; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int rg = 0; rg < kGroups; ++rg) {
        mma_m16n8k16<T>(acc[rg], a[0][j][2 * h], a[1][j][2 * h], a[0][j][2 * h + 1], a[1][j][2 * h + 1],
                        word(wv[rg][j], 2 * h), word(wv[rg][j], 2 * h + 1));
      }
    }
  }
}

// The same for at most 8 tokens when lanes of odd g hold their two weight pieces swapped
// (wv[rg][j] is piece j ^ 1: the bulk kernel's conflict-free shared loads). Every MMA takes
// one A: token rows g = x's piece 0, rows g + 8 = its piece 1 (the idle rows put to use, no
// register moves); the MMAs of piece slot j accumulate into acc[j]. Weight row 2c (slot j is
// piece j) then sums to acc[0] element 0 + acc[1] element 2, row 2c + 1 (slot j is piece
// 1 - j) to acc[1] element 1 + acc[0] element 3 (dual_result).
template <typename T, bool kNorm>
__device__ __forceinline__ void mma_step_dual(float (&acc)[2][kGroups][4], float& ss, const XStep& cur,
                                              const uint4 (&wv)[kGroups][kChunks], bool squares) {
  uint32_t a[kChunks][4];  // [piece][column pair]
#pragma unroll
  for (int j = 0; j < kChunks; ++j) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      if constexpr (kNorm) {
        if (squares) add_squares<T>(word(cur.x[0][j], q), ss);
        a[j][q] = norm_pair<T>(word(cur.x[0][j], q), word(cur.nw[j], q));
      } else {
        a[j][q] = word(cur.x[0][j], q);
      }
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
#pragma unroll
      for (int rg = 0; rg < kGroups; ++rg) {
        mma_m16n8k16<T>(acc[j][rg], a[0][2 * h], a[1][2 * h], a[0][2 * h + 1], a[1][2 * h + 1],
                        word(wv[rg][j], 2 * h), word(wv[rg][j], 2 * h + 1));
      }
    }
  }
}

// mma_step_dual's sums as a plain C fragment (elements 0 and 1: token g, rows 2c and 2c + 1).
__device__ __forceinline__ void dual_result(const float (&acc)[2][kGroups][4], float (&out)[kGroups][4]) {
#pragma unroll
  for (int rg = 0; rg < kGroups; ++rg) {
    out[rg][0] = acc[0][rg][0] + acc[1][rg][2];
    out[rg][1] = acc[1][rg][1] + acc[0][rg][3];
    out[rg][2] = out[rg][3] = 0.0f;
  }
}

// The epilogue of a tile (16 weight rows; gemv_silu_mul: 8 gate and their 8 up rows): W
// warps left their C fragments at all + w * warp_floats (and, with the norm, their sums of
// squares after them); thread tid of the W * 32 sums them over the warps, one output element
// each, and stores / adds / silu-muls. C fragment element q of lane (g, c): token
// g + 8 * (q / 2), row 2c + q % 2 of the group.
template <typename T, int W, bool kNorm, bool kTok16, Epi E>
__device__ __forceinline__ void write_outputs(const Params<T>& p, const float* all, int warp_floats, int64_t tile,
                                              int tid) {
  constexpr int kNc = kTok16 ? 4 : 2;
  constexpr int kSsOffset = kGroups * kNc * 32;
  constexpr int kOutGroups = E == Epi::kSiluMul ? 1 : kGroups;
  const int64_t m = p.m;
  for (int e = tid; e < kOutGroups * kNc * 32; e += W * 32) {
    const int el = e & 31, q = (e >> 5) % kNc, rg = e / (32 * kNc);
    const int t = (el >> 2) + 8 * (q >> 1);
    const int64_t row = tile * (kOutGroups * 8) + rg * 8 + 2 * (el & 3) + (q & 1);
    if (t >= p.n || row >= m) continue;
    const int slot = (rg * kNc + q) * 32 + el;
    float v = 0.0f, u = 0.0f;
#pragma unroll
    for (int w = 0; w < W; ++w) {
      v += all[w * warp_floats + slot];
      if constexpr (E == Epi::kSiluMul) u += all[w * warp_floats + slot + kNc * 32];  // the up group
    }
    if constexpr (kNorm) {
      float sum = 0.0f;
#pragma unroll
      for (int w = 0; w < W; ++w) sum += all[w * warp_floats + kSsOffset + t];
      const float inv_rms = rsqrtf(sum / static_cast<float>(p.k) + p.eps);
      v *= inv_rms;
      u *= inv_rms;
    }
    const int64_t at = t * m + row;
    if constexpr (E == Epi::kElem) {
      static_cast<T*>(p.out)[at] = from_f32<T>(v);
    } else if constexpr (E == Epi::kF32) {
      static_cast<float*>(p.out)[at] = v;
    } else if constexpr (E == Epi::kAdd) {
      T* r = static_cast<T*>(p.out);
      r[at] = from_f32<T>(to_f32(r[at]) + round_to<T>(v));
    } else {
      const float gate = round_to<T>(v), up = round_to<T>(u);
      static_cast<T*>(p.out)[at] = from_f32<T>(gate / (1.0f + expf(-gate)) * up);
    }
  }
}

// A warp's partial sums of a tile (acc, and with the norm its sums of squares ss) into red:
// [group][C element][lane], then [16] sums of squares per token.
template <bool kNorm, bool kTok16>
__device__ __forceinline__ void store_partials(float* red, const float (&acc)[kGroups][4], float (&ss)[2], int lane) {
  constexpr int kNc = kTok16 ? 4 : 2;
#pragma unroll
  for (int rg = 0; rg < kGroups; ++rg) {
#pragma unroll
    for (int q = 0; q < kNc; ++q) red[(rg * kNc + q) * 32 + lane] = acc[rg][q];
  }
  if constexpr (kNorm) {
    constexpr int kSsOffset = kGroups * kNc * 32;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      ss[h] += __shfl_xor_sync(0xffffffffu, ss[h], 1);
      ss[h] += __shfl_xor_sync(0xffffffffu, ss[h], 2);
    }
    if ((lane & 3) == 0) {
      red[kSsOffset + (lane >> 2)] = ss[0];
      red[kSsOffset + (lane >> 2) + 8] = ss[1];
    }
  }
}

}  // namespace tessera::cuda::gemv_detail
