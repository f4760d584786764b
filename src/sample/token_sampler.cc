#include "sample/token_sampler.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <utility>

namespace tessera {

SampleResult sample_token_detail(const float* logits, int64_t vocab, const SamplingRow& row, bool list_kept) {
  SampleResult r;
  r.greedy = true;
  if (vocab <= 0) return r;
  int32_t arg = 0;
  float max = sanitize_logit(logits[0]);
  for (int64_t i = 1; i < vocab; ++i) {
    const float x = sanitize_logit(logits[i]);
    if (x > max) max = x, arg = static_cast<int32_t>(i);
  }
  const float T = row.temperature;
  r.token = arg;
  r.max_logit = max;
  if (!(T > 0.0f) || !std::isfinite(max)) return r;  // greedy: no copy, no sort
  r.greedy = false;
  std::vector<float> l(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) l[i] = sanitize_logit(logits[i]);

  std::vector<uint64_t> comp(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) comp[i] = sampling_composite(float_order_key(l[i]), static_cast<int32_t>(i));
  // top-k: the k-th best composite key (exactly k tokens at or above it).
  uint64_t tau = 0;
  if (row.top_k > 0 && row.top_k < vocab) {
    std::vector<uint64_t> c = comp;
    std::nth_element(c.begin(), c.begin() + (row.top_k - 1), c.end(), std::greater<uint64_t>());
    tau = c[row.top_k - 1];
  }
  const bool use_minp = row.min_p > 0.0f;
  const float log_minp = use_minp ? tessera_logf(row.min_p) : 0.0f;
  auto passes = [&](int64_t i) {
    return comp[i] >= tau && (!use_minp || sampling_scaled(l[i], max, T) >= log_minp);
  };
  // top-p: the shortest prefix (in key order) of the survivors with mass >= target.
  if (row.top_p < 1.0f) {
    std::vector<std::pair<uint64_t, uint64_t>> cand;  // (composite, fixed-point mass)
    for (int64_t i = 0; i < vocab; ++i) {
      if (passes(i)) cand.emplace_back(comp[i], mass_fixed(sampling_scaled(l[i], max, T)));
    }
    std::sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    uint64_t total = 0;
    for (const auto& c : cand) total += c.second;
    const uint64_t target = top_p_target(row.top_p, total);
    uint64_t acc = 0;
    for (const auto& c : cand) {
      acc += c.second;
      if (acc >= target) {
        tau = std::max(tau, c.first);
        break;
      }
    }
  }
  // The Gumbel race over the kept tokens (the best token is always kept), lower id on ties.
  const uint64_t key = counter_rng_key(row.seed, row.offset);
  float best_s = gumbel_score(0.0f, key, arg);
  int32_t best_i = arg;
  for (int64_t i = 0; i < vocab; ++i) {
    if (!passes(i)) continue;
    const float a = sampling_scaled(l[i], max, T);
    if (a == -INFINITY) continue;  // weight 0: never drawn
    if (list_kept) r.kept.push_back(static_cast<int32_t>(i));
    const float s = gumbel_score(a, key, i);
    if (s > best_s || (s == best_s && i < best_i)) best_s = s, best_i = static_cast<int32_t>(i);
  }
  r.token = best_i;
  return r;
}

SamplingRow make_sampling_row(const SamplingParams& p, uint64_t seed, uint64_t offset) {
  SamplingRow row{};
  row.temperature = p.temperature;
  row.top_k = p.top_k <= 0 ? 0 : static_cast<int32_t>(std::min<int64_t>(p.top_k, INT32_MAX));
  row.top_p = p.top_p;
  row.min_p = p.min_p;
  row.seed = seed;
  row.offset = offset;
  return row;
}

}  // namespace tessera
