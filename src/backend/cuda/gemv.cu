// Fused decode GEMVs (see gemv.h).
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
// Math. Per step and j, one mma.sync m16n8k16 (bf16 in, fp32 accumulate) per row group and
// pair of columns: A = x (16 tokens x 16 columns; tokens 8..15 zero unless n > 8), B = the 8
// weight rows. A dot product is a sum over k, so any order of the columns works as long as
// A and B agree: lane c's 8 columns (4 bf16 pairs p0..p3) fill k-slots {2c, 2c+1} with p0
// (or p2) and {2c+8, 2c+9} with p1 (or p3) of the first (second) MMA, in A and in B alike.
// The A fragment of lane (g, c) is then x[token g] and x[token g + 8] at the lane's own
// columns: one 16-byte load of x per token half, held in registers one step ahead (x is
// small and read through L1). Tensor cores make the arithmetic free for any n <= 16.
//
// Norm prologue. The same pass accumulates sum(x^2) per token in fp32 and feeds the MMA
// bf16(x * norm_w); the CTA reduction yields inv_rms, applied to the fp32 sums in the
// epilogue. No separate pass over x.
//
// Epilogue. Each warp leaves its C fragments (and partial sums of squares) in its own
// ring; after one barrier the CTA's threads sum them over the warps, one output element
// per thread, and store / add / silu-mul.
#include <atomic>

#include "backend/cuda/gemv.h"
#include "backend/cuda/pdl.h"

namespace tessera::cuda {
namespace {

constexpr int kGroups = 2;                            // 8-row weight groups per CTA
constexpr int kChunks = 2;                            // 16-byte pieces per lane, group and step
constexpr int kStepK = kChunks * 32;                  // columns per step (4 lanes x 8, twice)
constexpr int kStageBytes = kGroups * kChunks * 512;  // one warp's step of weights

enum class Epi { kBf16, kF32, kAdd, kSiluMul };

struct Params {
  const bf16* x;
  const int32_t* rows;
  const bf16* norm;
  float eps;
  const bf16* w;
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

__device__ __forceinline__ uint4 ldg128(const bf16* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }

__device__ __forceinline__ uint32_t word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// d += A . B for A 16x16 (row-major fragment a0..a3), B 16x8 (col-major b0, b1), bf16 in.
__device__ __forceinline__ void mma_bf16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// bf16 pair x (low element first) times the norm weights nw, rounded back to a bf16 pair;
// adds x^2 to ss.
__device__ __forceinline__ uint32_t norm_pair(uint32_t x, uint32_t nw, float& ss) {
  const float x0 = __uint_as_float(x << 16), x1 = __uint_as_float(x & 0xffff0000u);
  const float w0 = __uint_as_float(nw << 16), w1 = __uint_as_float(nw & 0xffff0000u);
  ss = fmaf(x0, x0, ss);
  ss = fmaf(x1, x1, ss);
  const __nv_bfloat162 r = __floats2bfloat162_rn(x0 * w0, x1 * w1);
  return *reinterpret_cast<const uint32_t*>(&r);
}

// One step's x (and norm weights) of a lane: [token half][chunk].
struct XStep {
  uint4 x[2][kChunks];
  uint4 nw[kChunks];
};

// Register budget: 3 CTAs of 8 warps per SM (2 with 16 tokens), which the 64 KB of shared
// memory of the default shape allows too.
template <int W, int S, bool kNorm, bool kTok16, Epi E>
__global__ void __launch_bounds__(W * 32, (kTok16 ? 16 : 24) / W) gemv_kernel(const Params p) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int g = lane >> 2, c = lane & 3;
  const int64_t k = p.k, m = p.m;
  pdl_launch_dependents();

  // This lane's weight rows; rows past the end repeat the last one (their outputs are
  // dropped), so every copy stays in bounds.
  const bf16* wrow[kGroups];
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
  const bf16* x0 = nullptr;
  const bf16* x1 = nullptr;
  if (g < p.n) x0 = p.x + static_cast<int64_t>(p.rows != nullptr ? p.rows[g] : g) * k + c * 8;
  if (kTok16 && g + 8 < p.n) x1 = p.x + static_cast<int64_t>(p.rows != nullptr ? p.rows[g + 8] : g + 8) * k + c * 8;
  const bf16* nrm = kNorm ? p.norm + c * 8 : nullptr;
  auto load_x = [&](int i, XStep& s) {
    const int64_t k0 = static_cast<int64_t>(warp + i * W) * kStepK;
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      const int64_t off = k0 + j * 32;
      const bool valid = off + c * 8 < k;
      s.x[0][j] = valid && x0 != nullptr ? ldg128(x0 + off) : make_uint4(0, 0, 0, 0);
      if constexpr (kTok16) s.x[1][j] = valid && x1 != nullptr ? ldg128(x1 + off) : make_uint4(0, 0, 0, 0);
      if constexpr (kNorm) s.nw[j] = valid ? ldg128(nrm + off) : make_uint4(0, 0, 0, 0);
    }
  };

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
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      uint32_t a[2][4];  // [token half][column pair]
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if constexpr (kNorm) {
          a[0][q] = norm_pair(word(cur.x[0][j], q), word(cur.nw[j], q), ss[0]);
          a[1][q] = kTok16 ? norm_pair(word(cur.x[1][j], q), word(cur.nw[j], q), ss[1]) : 0u;
        } else {
          a[0][q] = word(cur.x[0][j], q);
          a[1][q] = kTok16 ? word(cur.x[1][j], q) : 0u;
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int rg = 0; rg < kGroups; ++rg) {
          mma_bf16(acc[rg], a[0][2 * h], a[1][2 * h], a[0][2 * h + 1], a[1][2 * h + 1], word(wv[rg][j], 2 * h),
                   word(wv[rg][j], 2 * h + 1));
        }
      }
    }
    cur = next;
  }

  // Each warp's partial sums into its own ring (its copies have all landed), then the CTA's
  // threads sum over the warps. C fragment element q of lane (g, c): token g + 8 * (q / 2),
  // row 2c + q % 2 of the group.
  constexpr int kNc = kTok16 ? 4 : 2;
  cp_async_wait<0>();
  __syncwarp();
  float* red = reinterpret_cast<float*>(region);
#pragma unroll
  for (int rg = 0; rg < kGroups; ++rg) {
#pragma unroll
    for (int q = 0; q < kNc; ++q) red[(rg * kNc + q) * 32 + lane] = acc[rg][q];
  }
  constexpr int kSsOffset = kGroups * kNc * 32;  // floats; then [16] sums of squares
  if constexpr (kNorm) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      ss[h] += __shfl_xor_sync(0xffffffffu, ss[h], 1);
      ss[h] += __shfl_xor_sync(0xffffffffu, ss[h], 2);
    }
    if (c == 0) {
      red[kSsOffset + g] = ss[0];
      red[kSsOffset + g + 8] = ss[1];
    }
  }
  __syncthreads();
  constexpr int kOutGroups = E == Epi::kSiluMul ? 1 : kGroups;
  constexpr int kWarpFloats = S * kStageBytes / 4;
  const float* all = reinterpret_cast<const float*>(smem);
  for (int e = static_cast<int>(threadIdx.x); e < kOutGroups * kNc * 32; e += W * 32) {
    const int el = e & 31, q = (e >> 5) % kNc, rg = e / (32 * kNc);
    const int t = (el >> 2) + 8 * (q >> 1);
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (kOutGroups * 8) + rg * 8 + 2 * (el & 3) + (q & 1);
    if (t >= p.n || row >= m) continue;
    const int slot = (rg * kNc + q) * 32 + el;
    float v = 0.0f, u = 0.0f;
#pragma unroll
    for (int w = 0; w < W; ++w) {
      v += all[w * kWarpFloats + slot];
      if constexpr (E == Epi::kSiluMul) u += all[w * kWarpFloats + slot + kNc * 32];  // the up group
    }
    if constexpr (kNorm) {
      float sum = 0.0f;
#pragma unroll
      for (int w = 0; w < W; ++w) sum += all[w * kWarpFloats + kSsOffset + t];
      const float inv_rms = rsqrtf(sum / static_cast<float>(k) + p.eps);
      v *= inv_rms;
      u *= inv_rms;
    }
    const int64_t at = t * m + row;
    if constexpr (E == Epi::kBf16) {
      static_cast<bf16*>(p.out)[at] = __float2bfloat16(v);
    } else if constexpr (E == Epi::kF32) {
      static_cast<float*>(p.out)[at] = v;
    } else if constexpr (E == Epi::kAdd) {
      bf16* r = static_cast<bf16*>(p.out);
      r[at] = __float2bfloat16(__bfloat162float(r[at]) + __bfloat162float(__float2bfloat16(v)));
    } else {
      const float gate = __bfloat162float(__float2bfloat16(v)), up = __bfloat162float(__float2bfloat16(u));
      static_cast<bf16*>(p.out)[at] = __float2bfloat16(gate / (1.0f + expf(-gate)) * up);
    }
  }
}

template <int W, int S, bool kNorm, bool kTok16, Epi E>
cudaError_t launch(const Params& p, int64_t ctas, bool pdl, cudaStream_t stream) {
  auto* kernel = &gemv_kernel<W, S, kNorm, kTok16, E>;
  constexpr int kSmem = W * S * kStageBytes;
  if constexpr (kSmem > 48 * 1024) {
    // Opt in to more than 48 KB of dynamic shared memory, once per device.
    static std::atomic<uint64_t> done{0};
    int device = 0;
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
    const uint64_t bit = uint64_t{1} << (device & 63);
    if ((done.load(std::memory_order_acquire) & bit) == 0) {
      if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
          e != cudaSuccess) {
        return e;
      }
      done.fetch_or(bit, std::memory_order_acq_rel);
    }
  }
  return launch_pdl(kernel, dim3(static_cast<unsigned>(ctas)), dim3(W * 32), kSmem, stream, pdl, p);
}

template <int W, int S, Epi E>
cudaError_t dispatch(const Params& p, int64_t ctas, bool pdl, cudaStream_t stream) {
  const bool norm = p.norm != nullptr, tok16 = p.n > 8;
  if (norm) {
    return tok16 ? launch<W, S, true, true, E>(p, ctas, pdl, stream)
                 : launch<W, S, true, false, E>(p, ctas, pdl, stream);
  }
  return tok16 ? launch<W, S, false, true, E>(p, ctas, pdl, stream)
               : launch<W, S, false, false, E>(p, ctas, pdl, stream);
}

constexpr GemvVariant kVariants[] = {{8, 4}, {4, 4}, {8, 6}, {4, 8}};

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <Epi E>
std::string run(const char* name, const GemvInput& in, const bf16* w, int64_t n, int64_t k, int64_t m, void* out,
                cudaStream_t stream, const GemvOptions& opt) {
  if (n == 0 || m == 0) return "";
  if (!gemv_supported(n, k)) {
    return std::string(name) + ": needs 1 <= n <= 16 and k a positive multiple of 8 (n " + std::to_string(n) + ", k " +
           std::to_string(k) + ")";
  }
  if (!aligned16(in.x) || !aligned16(w) || (in.norm != nullptr && !aligned16(in.norm))) {
    return std::string(name) + ": x, w and norm must be 16-byte aligned";
  }
  if (opt.variant < 0 || opt.variant >= gemv_variant_count()) return std::string(name) + ": no such variant";
  const Params p{in.x, in.rows, in.norm, in.eps, w, static_cast<int>(n), k, m, out};
  const int64_t ctas = (m + (E == Epi::kSiluMul ? 7 : 15)) / (E == Epi::kSiluMul ? 8 : 16);
  cudaError_t e = cudaSuccess;
  switch (opt.variant) {
    case 0:
      e = dispatch<kVariants[0].warps, kVariants[0].stages, E>(p, ctas, opt.pdl, stream);
      break;
    case 1:
      e = dispatch<kVariants[1].warps, kVariants[1].stages, E>(p, ctas, opt.pdl, stream);
      break;
    case 2:
      e = dispatch<kVariants[2].warps, kVariants[2].stages, E>(p, ctas, opt.pdl, stream);
      break;
    default:
      e = dispatch<kVariants[3].warps, kVariants[3].stages, E>(p, ctas, opt.pdl, stream);
      break;
  }
  return e == cudaSuccess ? "" : std::string(name) + ": " + cudaGetErrorString(e);
}

}  // namespace

bool gemv_supported(int64_t n, int64_t k) { return n >= 1 && n <= kGemvMaxTokens && k > 0 && k % 8 == 0; }

int gemv_variant_count() { return static_cast<int>(sizeof(kVariants) / sizeof(kVariants[0])); }

GemvVariant gemv_variant(int i) { return kVariants[i]; }

std::string gemv(const GemvInput& in, const bf16* w, int64_t n, int64_t k, int64_t m, bf16* out, cudaStream_t stream,
                 const GemvOptions& opt) {
  return run<Epi::kBf16>("gemv", in, w, n, k, m, out, stream, opt);
}

std::string gemv_f32(const GemvInput& in, const bf16* w, int64_t n, int64_t k, int64_t m, float* out,
                     cudaStream_t stream, const GemvOptions& opt) {
  return run<Epi::kF32>("gemv_f32", in, w, n, k, m, out, stream, opt);
}

std::string gemv_add(const GemvInput& in, const bf16* w, int64_t n, int64_t k, int64_t m, bf16* residual,
                     cudaStream_t stream, const GemvOptions& opt) {
  return run<Epi::kAdd>("gemv_add", in, w, n, k, m, residual, stream, opt);
}

std::string gemv_silu_mul(const GemvInput& in, const bf16* w_gate_up, int64_t n, int64_t k, int64_t inter, bf16* out,
                          cudaStream_t stream, const GemvOptions& opt) {
  return run<Epi::kSiluMul>("gemv_silu_mul", in, w_gate_up, n, k, inter, out, stream, opt);
}

}  // namespace tessera::cuda
