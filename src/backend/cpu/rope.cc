#include <cmath>
#include <vector>

#include "backend/cpu/ops.h"

namespace tessera::cpu {

void rope_inv_freq(const ModelConfig& c, const float* freq_factors, float* inv_freq) {
  const int64_t half = c.head_dim / 2;
  const RopeScaling& s = c.rope_scaling;
  for (int64_t i = 0; i < half; ++i) {
    // inv_freq_i = theta^(-2i/d), rounded to fp32 as HF computes it.
    double f = static_cast<float>(1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) /
                                                                  static_cast<double>(c.head_dim)));
    if (s.type == RopeScaling::Type::kLinear) {
      f /= s.factor;
    } else if (s.type == RopeScaling::Type::kLlama3) {
      // Long wavelengths are slowed by `factor`, short ones kept, the band between
      // interpolated smoothly.
      const double old_len = static_cast<double>(s.original_max_position_embeddings);
      const double low_wavelen = old_len / s.low_freq_factor;
      const double high_wavelen = old_len / s.high_freq_factor;
      const double wavelen = 2.0 * M_PI / f;
      if (wavelen > low_wavelen) {
        f = f / s.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth =
            (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1.0 - smooth) * f / s.factor + smooth * f;
      }
    }
    if (freq_factors != nullptr) f /= freq_factors[i];
    inv_freq[i] = static_cast<float>(f);
  }
}

void apply_rope(float* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads,
                int64_t head_dim, const float* inv_freq, RopeLayout layout) {
  const int64_t half = head_dim / 2;
#pragma omp parallel if (num_tokens > 16)
  {
    std::vector<float> cos_v(half), sin_v(half);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < num_tokens; ++t) {
      const float pos = static_cast<float>(positions[t]);
      for (int64_t i = 0; i < half; ++i) {
        const float angle = pos * inv_freq[i];  // fp32 product, as HF does
        cos_v[i] = std::cos(angle);
        sin_v[i] = std::sin(angle);
      }
      for (int64_t h = 0; h < num_heads; ++h) {
        float* v = x + (t * num_heads + h) * head_dim;
        if (layout == RopeLayout::kHalf) {
          for (int64_t i = 0; i < half; ++i) {
            const float a = v[i], b = v[i + half];
            v[i] = a * cos_v[i] - b * sin_v[i];
            v[i + half] = b * cos_v[i] + a * sin_v[i];
          }
        } else {
          for (int64_t i = 0; i < half; ++i) {
            const float a = v[2 * i], b = v[2 * i + 1];
            v[2 * i] = a * cos_v[i] - b * sin_v[i];
            v[2 * i + 1] = b * cos_v[i] + a * sin_v[i];
          }
        }
      }
    }
  }
}

}  // namespace tessera::cpu
