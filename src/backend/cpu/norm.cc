#include <immintrin.h>

#include <cmath>

#include "backend/cpu/ops.h"
#include "backend/cpu/simd.h"

namespace tessera::cpu {

// out = x * rsqrt(mean(x^2) + eps) * weight, the sum of squares in fp32 like HF.
void rms_norm(const float* x, const float* weight, float eps, int64_t n, int64_t dim, float* out) {
#pragma omp parallel for schedule(static) if (n * dim > 65536)
  for (int64_t t = 0; t < n; ++t) {
    const float* xr = x + t * dim;
    float* yr = out + t * dim;
    int64_t i = 0;
    __m256 acc = _mm256_setzero_ps();
    for (; i + 8 <= dim; i += 8) {
      const __m256 v = _mm256_loadu_ps(xr + i);
      acc = _mm256_fmadd_ps(v, v, acc);
    }
    float ss = hsum(acc);
    for (; i < dim; ++i) ss += xr[i] * xr[i];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(dim) + eps);
    const __m256 vinv = _mm256_set1_ps(inv);
    i = 0;
    for (; i + 8 <= dim; i += 8) {
      const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(xr + i), vinv);
      _mm256_storeu_ps(yr + i, _mm256_mul_ps(v, _mm256_loadu_ps(weight + i)));
    }
    for (; i < dim; ++i) yr[i] = xr[i] * inv * weight[i];
  }
}

void add_inplace(float* x, const float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(x + i, _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  }
  for (; i < n; ++i) x[i] += y[i];
}

// silu(g) * u with silu(g) = g / (1 + e^-g).
void silu_and_mul(const float* gate, const float* up, int64_t n, int64_t inter, float* out) {
#pragma omp parallel for schedule(static) if (n * inter > 65536)
  for (int64_t t = 0; t < n; ++t) {
    const float* g = gate + t * inter;
    const float* u = up + t * inter;
    float* o = out + t * inter;
    int64_t i = 0;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= inter; i += 8) {
      const __m256 gv = _mm256_loadu_ps(g + i);
      const __m256 e = exp256(_mm256_sub_ps(_mm256_setzero_ps(), gv));
      const __m256 s = _mm256_div_ps(gv, _mm256_add_ps(one, e));
      _mm256_storeu_ps(o + i, _mm256_mul_ps(s, _mm256_loadu_ps(u + i)));
    }
    for (; i < inter; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  }
}

}  // namespace tessera::cpu
