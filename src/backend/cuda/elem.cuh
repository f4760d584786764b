// The 16-bit element types of the device forward pass (bf16 and fp16: vLLM's dtype
// "bfloat16" and "half") as one interface for templated kernels: conversions to and from
// fp32, paired (x2) conversions, and the tensor-core MMAs with fp32 accumulation. A kernel
// written against these runs either type; only range and rounding differ (fp16: 10-bit
// mantissa, max 65504; bf16: 7-bit mantissa, fp32's range).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace tessera::cuda {

template <typename T>
struct ElemTraits;

template <>
struct ElemTraits<__nv_bfloat16> {
  using x2 = __nv_bfloat162;
  static constexpr bool kIsHalf = false;
};

template <>
struct ElemTraits<__half> {
  using x2 = __half2;
  static constexpr bool kIsHalf = true;
};

template <typename T>
using elem_x2 = typename ElemTraits<T>::x2;

__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float2 to_f32x2(__nv_bfloat162 x) { return __bfloat1622float2(x); }
__device__ __forceinline__ float2 to_f32x2(__half2 x) { return __half22float2(x); }

// Round-to-nearest-even from fp32 (fp16: overflow gives +-inf, as torch's .half()).
template <typename T>
__device__ __forceinline__ T from_f32(float f) {
  if constexpr (ElemTraits<T>::kIsHalf) {
    return __float2half_rn(f);
  } else {
    return __float2bfloat16(f);
  }
}
template <typename T>
__device__ __forceinline__ elem_x2<T> from_f32x2(float a, float b) {
  if constexpr (ElemTraits<T>::kIsHalf) {
    return __floats2half2_rn(a, b);
  } else {
    return __floats2bfloat162_rn(a, b);
  }
}

// f rounded to T and back: what storing f as a T and reading it again gives.
template <typename T>
__device__ __forceinline__ float round_to(float f) {
  return to_f32(from_f32<T>(f));
}

// Two fp32 values rounded into one 32-bit register of T pairs (lo in the low half), the
// operand format of the MMAs below.
template <typename T>
__device__ __forceinline__ uint32_t pack_f32x2(float lo, float hi) {
  const elem_x2<T> v = from_f32x2<T>(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// 8 elements at p (16-byte aligned) to fp32, and back.
template <typename T>
__device__ __forceinline__ void load_x8(const T* p, float* v) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const auto* h = reinterpret_cast<const elem_x2<T>*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = to_f32x2(h[i]);
    v[2 * i] = f.x, v[2 * i + 1] = f.y;
  }
}
template <typename T>
__device__ __forceinline__ void store_x8(T* p, const float* v) {
  uint4 u;
  auto* h = reinterpret_cast<elem_x2<T>*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = from_f32x2<T>(v[2 * i], v[2 * i + 1]);
  *reinterpret_cast<uint4*>(p) = u;
}

// d += a . b on tensor cores, fp32 accumulation: m16n8k16 (a: 4 registers, b: 2) and
// m16n8k8 (a: 2, b: 1), row.col, registers of T pairs.
template <typename T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                             uint32_t b0, uint32_t b1) {
  if constexpr (ElemTraits<T>::kIsHalf) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}
template <typename T>
__device__ __forceinline__ void mma_m16n8k8(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
  if constexpr (ElemTraits<T>::kIsHalf) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(b0));
  } else {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(b0));
  }
}

// Elementwise product of two registers of T pairs, rounded once (mul.rn).
template <typename T>
__device__ __forceinline__ uint32_t mul_x2(uint32_t x, uint32_t y) {
  uint32_t r;
  if constexpr (ElemTraits<T>::kIsHalf) {
    asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(r) : "r"(x), "r"(y));
  } else {
    asm("mul.rn.bf16x2 %0, %1, %2;\n" : "=r"(r) : "r"(x), "r"(y));
  }
  return r;
}

}  // namespace tessera::cuda
