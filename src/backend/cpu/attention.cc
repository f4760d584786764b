#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/cpu/simd.h"
#include "common/check.h"

namespace tessera::cpu {
namespace {

// A cached K or V element type: its loads as floats (8 at a time) and its stores.
struct F32 {
  using T = float;
  static __m256 load8(const T* p) { return _mm256_loadu_ps(p); }
  static float load1(const T* p) { return *p; }
  static void store(const float* x, T* p, int64_t n) { std::memcpy(p, x, sizeof(float) * n); }
};
struct F16 {
  using T = uint16_t;
  static __m256 load8(const T* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static float load1(const T* p) { return _cvtsh_ss(*p); }
  static void store(const float* x, T* p, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; ++i) p[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
  }
};
struct Bf16 {
  using T = uint16_t;
  static __m256 load8(const T* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  static float load1(const T* p) {
    const uint32_t u = uint32_t{*p} << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static void store(const float* x, T* p, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {  // round to nearest even (finite values)
      uint32_t u;
      std::memcpy(&u, x + i, 4);
      u += 0x7fffu + ((u >> 16) & 1u);
      p[i] = static_cast<uint16_t>(u >> 16);
    }
  }
};

template <typename E>
inline float dot(const float* a, const typename E::T* b, int64_t n) {
  int64_t i = 0;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), E::load8(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), E::load8(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), E::load8(b + i), acc0);
  float s = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) s += a[i] * E::load1(b + i);
  return s;
}

template <typename E>
inline void axpy(float a, const typename E::T* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, E::load8(x + i), _mm256_loadu_ps(y + i)));
  }
  for (; i < n; ++i) y[i] += a * E::load1(x + i);
}

// In place: s[j] = exp(s[j] - max); returns the sum.
float exp_and_sum(float* s, int64_t n, float max) {
  const __m256 vmax = _mm256_set1_ps(max);
  __m256 acc = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(s + j), vmax));
    _mm256_storeu_ps(s + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = hsum(acc);
  for (; j < n; ++j) {
    s[j] = std::exp(s[j] - max);
    sum += s[j];
  }
  return sum;
}

}  // namespace

namespace {

// f.template operator()<E>() with E the element type of `dtype`: one dispatch for every op.
template <typename F>
void with_element(KvDtype dtype, F&& f) {
  switch (dtype) {
    case KvDtype::kFloat32:
      return f.template operator()<F32>();
    case KvDtype::kFloat16:
      return f.template operator()<F16>();
    case KvDtype::kBfloat16:
      return f.template operator()<Bf16>();
  }
}

template <typename E>
void write_kv(const float* k, const float* v, const ForwardBatch& batch, int64_t kv_dim, void* k_cache,
              void* v_cache) {
  auto* kc = static_cast<typename E::T*>(k_cache);
  auto* vc = static_cast<typename E::T*>(v_cache);
  for (int64_t t = 0; t < batch.num_tokens(); ++t) {
    const int64_t slot = batch.slot_mapping[t];
    E::store(k + t * kv_dim, kc + slot * kv_dim, kv_dim);
    E::store(v + t * kv_dim, vc + slot * kv_dim, kv_dim);
  }
}

}  // namespace

void write_kv_cache(const float* k, const float* v, const ForwardBatch& batch, int64_t kv_dim, void* k_cache,
                    void* v_cache, KvDtype dtype) {
  with_element(dtype, [&]<typename E>() { write_kv<E>(k, v, batch, kv_dim, k_cache, v_cache); });
}

namespace {

// softmax(q k^T * scale) v over each query's visible keys, two passes per (token, head):
// scores into a scratch row, then exp-normalise and accumulate values.

template <typename E>
void attend(const float* q, const void* k_data, const void* v_data, const ForwardBatch& batch,
            const AttentionShape& shape, float* out) {
  const auto* k_cache = static_cast<const typename E::T*>(k_data);
  const auto* v_cache = static_cast<const typename E::T*>(v_data);
  const int64_t num_tokens = batch.num_tokens();
  const int64_t hd = shape.head_dim;
  const int64_t kv_dim = shape.num_kv_heads * hd;
  const int64_t group = shape.num_heads / shape.num_kv_heads;
  const int64_t bs = shape.block_size;
  // token -> sequence
  std::vector<int32_t> seq_of_token(num_tokens);
  for (int64_t s = 0; s < batch.num_seqs(); ++s) {
    for (int32_t t = batch.query_start_loc[s]; t < batch.query_start_loc[s + 1]; ++t) {
      seq_of_token[t] = static_cast<int32_t>(s);
    }
  }
  const int64_t items = num_tokens * shape.num_heads;
#pragma omp parallel if (items > 1)
  {
    thread_local std::vector<float> scores;  // grows to the longest context, kept across calls
#pragma omp for schedule(dynamic, 4)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t t = item / shape.num_heads;
      const int64_t h = item % shape.num_heads;
      const int64_t kvh = h / group;
      const int32_t s = seq_of_token[t];
      const int32_t* blocks = batch.block_table_ids.data() + batch.block_table_indptr[s];
      const int64_t pos = batch.positions[t];
      const int64_t first = shape.sliding_window > 0 ? std::max<int64_t>(0, pos - shape.sliding_window + 1) : 0;
      const int64_t n = pos + 1 - first;
      scores.resize(static_cast<size_t>(n));
      const float* qv = q + (t * shape.num_heads + h) * hd;
      float max = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t p = first + j;
        const int64_t slot = int64_t{blocks[p / bs]} * bs + p % bs;
        const float sc = dot<E>(qv, k_cache + slot * kv_dim + kvh * hd, hd) * shape.scale;
        scores[j] = sc;
        max = std::max(max, sc);
      }
      const float inv_sum = 1.0f / exp_and_sum(scores.data(), n, max);
      float* o = out + (t * shape.num_heads + h) * hd;
      std::memset(o, 0, sizeof(float) * hd);
      for (int64_t j = 0; j < n; ++j) {
        const int64_t p = first + j;
        const int64_t slot = int64_t{blocks[p / bs]} * bs + p % bs;
        axpy<E>(scores[j] * inv_sum, v_cache + slot * kv_dim + kvh * hd, o, hd);
      }
    }
  }
}

}  // namespace

void paged_attention(const float* q, const void* k_cache, const void* v_cache, const ForwardBatch& batch,
                     const AttentionShape& shape, float* out, KvDtype dtype) {
  with_element(dtype, [&]<typename E>() { attend<E>(q, k_cache, v_cache, batch, shape, out); });
}

}  // namespace tessera::cpu
