// Device building blocks of the fused q/k/v RoPE (qkv_rope_cache's 16-byte kernel and the
// attention kernel's RoPE prologue): a q or k head of head_dim elements is head_dim / 16
// lanes, adjacent in a warp, each holding 8 rotation pairs (16 elements) in x[16]:
//   rotate-half: lane j holds [8j, 8j + 8) and [half + 8j, ...), pair e = (x[e], x[8 + e]);
//   interleaved: lane j holds [16j, 16j + 16), pair e = (x[2e], x[2e + 1]);
// both at frequency 8j + e. A v head uses the same slices, copied.
#pragma once

#include "backend/cuda/elem.cuh"

#include <cstdint>

namespace tessera::cuda::rope_detail {

// Where lane j's two 8-element pieces sit in its head.
struct HeadSlice {
  int a_off, b_off;
};
__device__ __forceinline__ HeadSlice head_slice(int j, int head_dim, bool interleaved) {
  return interleaved ? HeadSlice{16 * j, 16 * j + 8} : HeadSlice{8 * j, head_dim / 2 + 8 * j};
}

// x = head's slice (+ bias's, when not null).
template <typename T>
__device__ __forceinline__ void load_slice(const T* head, const T* bias, HeadSlice s, float (&x)[16]) {
  load_x8(head + s.a_off, x);
  load_x8(head + s.b_off, x + 8);
  if (bias != nullptr) {
    float b[16];
    load_x8(bias + s.a_off, b);
    load_x8(bias + s.b_off, b + 8);
#pragma unroll
    for (int e = 0; e < 16; ++e) x[e] += b[e];
  }
}

template <typename T>
__device__ __forceinline__ void store_slice(T* head, HeadSlice s, const float (&x)[16]) {
  store_x8(head + s.a_off, x);
  store_x8(head + s.b_off, x + 8);
}

// x = rms_norm(head) * norm, rounded to T as the unfused norm's output would be; the sum
// of squares goes over the head's lanes_per_head lanes, so every lane of the warp calls this
// (apply false: the lane takes part in the sum only; norm null: no norm for this head).
template <typename T>
__device__ __forceinline__ void head_rms_norm(float (&x)[16], bool apply, const T* norm, float eps, int head_dim,
                                              int lanes_per_head, HeadSlice s) {
  float ss = 0.0f;
#pragma unroll
  for (int e = 0; e < 16; ++e) ss += x[e] * x[e];
  for (int o = 1; o < lanes_per_head; o *= 2) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (!apply || norm == nullptr) return;
  const float inv_rms = rsqrtf(ss / static_cast<float>(head_dim) + eps);
  float w[16];
  load_x8(norm + s.a_off, w);
  load_x8(norm + s.b_off, w + 8);
#pragma unroll
  for (int e = 0; e < 16; ++e) x[e] = round_to<T>(x[e] * inv_rms * w[e]);
}

// Rotates lane j's 8 pairs by cos_s / sin_s [head_dim / 2] (the token's angles). The inputs
// are rounded to T first, as the unfused projection (and bias) output would be.
template <typename T, bool kInterleaved>
__device__ __forceinline__ void rotate_slice(float (&x)[16], int j, const float* cos_s, const float* sin_s) {
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const int i0 = kInterleaved ? 2 * e : e, i1 = kInterleaved ? 2 * e + 1 : 8 + e;
    const float x0 = round_to<T>(x[i0]), x1 = round_to<T>(x[i1]);
    const float c = cos_s[8 * j + e], s = sin_s[8 * j + e];
    x[i0] = x0 * c - x1 * s;
    x[i1] = x1 * c + x0 * s;
  }
}

// The layout as a branch, so that x is indexed by constants in each (a register array
// indexed by a runtime value costs a chain of selects per element).
template <typename T>
__device__ __forceinline__ void rotate_slice(float (&x)[16], int j, bool interleaved, const float* cos_s,
                                             const float* sin_s) {
  if (interleaved) {
    rotate_slice<T, true>(x, j, cos_s, sin_s);
  } else {
    rotate_slice<T, false>(x, j, cos_s, sin_s);
  }
}

}  // namespace tessera::cuda::rope_detail
