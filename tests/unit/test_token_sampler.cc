// The sampler of every backend (sample_token, the host twin of the GPU's): greedy, the kept
// set and the distribution of its draws against the exact distribution of its rules
// (computed here independently, in double), and the determinism of the counter-based
// random numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sample/counter_rng.h"
#include "sample/sampler.h"
#include "sample/token_sampler.h"

namespace tessera {
namespace {

SamplingRow row_of(float t, int32_t top_k, float top_p, float min_p, uint64_t seed, uint64_t offset) {
  return SamplingRow{t, top_k, top_p, min_p, seed, offset};
}

// The exact probabilities the rules give (in double): sorted by
// (logit desc, id asc), the first top_k, w = e^((l - max) / T) >= min_p, the shortest
// prefix with cumulative probability >= top_p, renormalized.
std::vector<double> exact_distribution(const std::vector<float>& logits, float t, int32_t top_k, float top_p,
                                       float min_p) {
  const int64_t n = static_cast<int64_t>(logits.size());
  std::vector<int32_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(),
            [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  if (top_k > 0 && top_k < n) idx.resize(top_k);
  const float max = logits[idx[0]];
  std::vector<double> w(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) w[i] = std::exp(static_cast<double>(logits[idx[i]] - max) / t);
  size_t keep = idx.size();
  if (min_p > 0) {
    while (keep > 1 && w[keep - 1] < min_p) --keep;
  }
  double total = std::accumulate(w.begin(), w.begin() + keep, 0.0);
  if (top_p < 1) {
    double acc = 0;
    for (size_t i = 0; i < keep; ++i) {
      acc += w[i] / total;
      if (acc >= top_p) {
        keep = i + 1;
        break;
      }
    }
    total = std::accumulate(w.begin(), w.begin() + keep, 0.0);
  }
  std::vector<double> p(n, 0.0);
  for (size_t i = 0; i < keep; ++i) p[idx[i]] = w[i] / total;
  return p;
}

std::vector<float> random_logits(int64_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> l(n);
  for (auto& x : l) x = d(rng);
  return l;
}

// Empirical frequencies within a few standard deviations of p, zero where p is zero, and a
// chi-square over the kept tokens well inside its tail.
void expect_matches(const std::vector<int64_t>& count, const std::vector<double>& p, int64_t draws,
                    const std::string& what) {
  double chi2 = 0;
  int dof = -1;
  for (size_t i = 0; i < p.size(); ++i) {
    const double f = static_cast<double>(count[i]) / draws;
    if (p[i] == 0) {
      EXPECT_EQ(count[i], 0) << what << ": token " << i << " is not kept but was drawn";
      continue;
    }
    ++dof;
    const double sd = std::sqrt(p[i] * (1 - p[i]) / draws);
    EXPECT_LE(std::fabs(f - p[i]), 5 * sd + 1e-4) << what << ": token " << i << " p " << p[i] << " got " << f;
    const double e = p[i] * draws;
    chi2 += (count[i] - e) * (count[i] - e) / e;
  }
  if (dof > 0) {
    // Mean dof, sd sqrt(2 dof): 6 sd is far beyond any honest draw.
    EXPECT_LT(chi2, dof + 6 * std::sqrt(2.0 * dof) + 10) << what << ": chi-square " << chi2 << " dof " << dof;
  }
}

TEST(TokenSampler, GreedyIsArgmaxLowestIdOnTies) {
  std::vector<float> l = random_logits(1000, 1, 3.0f);
  const int32_t want = argmax(l.data(), 1000);
  EXPECT_EQ(sample_token(l.data(), 1000, row_of(0.0f, 0, 1, 0, 7, 0)), want);
  // Top-k / top-p / min-p do not matter at temperature 0.
  EXPECT_EQ(sample_token(l.data(), 1000, row_of(0.0f, 5, 0.5f, 0.3f, 7, 3)), want);
  l[17] = l[900] = 50.0f;
  EXPECT_EQ(sample_token(l.data(), 1000, row_of(0.0f, 0, 1, 0, 1, 0)), 17);
  // Everything masked (or NaN): token 0, as argmax.
  std::vector<float> masked(10, -INFINITY);
  masked[3] = NAN;
  EXPECT_EQ(sample_token(masked.data(), 10, row_of(1.0f, 0, 1, 0, 1, 0)), 0);
  // A +inf logit: nothing to sample, the first +inf wins.
  std::vector<float> inf = {1.0f, INFINITY, 2.0f, INFINITY};
  EXPECT_EQ(sample_token(inf.data(), 4, row_of(1.0f, 0, 1, 0, 1, 0)), 1);
  // One finite logit among -inf: always it.
  std::vector<float> one(50, -INFINITY);
  one[42] = -3.0f;
  for (uint64_t off = 0; off < 100; ++off) {
    EXPECT_EQ(sample_token(one.data(), 50, row_of(1.0f, 0, 0.9f, 0, 5, off)), 42);
  }
}

struct Combo {
  float t;
  int32_t top_k;
  float top_p, min_p;
};

TEST(TokenSampler, DrawsFollowTheKeptRenormalizedDistribution) {
  const std::vector<Combo> combos = {{1.0f, 0, 1.0f, 0.0f},   {0.7f, 0, 1.0f, 0.0f},  {1.3f, 5, 1.0f, 0.0f},
                                     {0.8f, 0, 0.9f, 0.0f},   {1.0f, 0, 1.0f, 0.1f},  {0.9f, 10, 0.8f, 0.05f},
                                     {2.0f, 1, 1.0f, 0.0f},   {1.0f, 0, 0.5f, 0.2f},  {1.5f, 12, 0.95f, 0.0f},
                                     {0.5f, 0, 0.99f, 0.01f}};
  const int64_t vocab = 24, draws = 20000;
  std::vector<float> logits = random_logits(vocab, 2, 1.5f);
  logits[5] = -INFINITY;  // masked
  logits[9] = logits[2];  // a tie
  for (size_t c = 0; c < combos.size(); ++c) {
    const Combo& k = combos[c];
    const std::vector<double> p = exact_distribution(logits, k.t, k.top_k, k.top_p, k.min_p);
    std::vector<int64_t> count(vocab, 0);
    const uint64_t seed = 1000 + c;
    for (int64_t off = 0; off < draws; ++off) {
      const SampleResult r =
          sample_token_detail(logits.data(), vocab, row_of(k.t, k.top_k, k.top_p, k.min_p, seed, off));
      ASSERT_GE(r.token, 0);
      ASSERT_LT(r.token, vocab);
      ++count[r.token];
      if (off == 0) {  // the kept set is the support of the exact distribution
        std::vector<int32_t> support;
        for (int32_t i = 0; i < vocab; ++i) {
          if (p[i] > 0) support.push_back(i);
        }
        EXPECT_EQ(r.kept, support) << "combo " << c;
      }
    }
    const std::string what = "T " + std::to_string(k.t) + " top_k " + std::to_string(k.top_k) + " top_p " +
                             std::to_string(k.top_p) + " min_p " + std::to_string(k.min_p);
    expect_matches(count, p, draws, what);
  }
}

TEST(TokenSampler, OnlyKeptTokensAppearOnALargeVocab) {
  const int64_t vocab = 5000;
  const std::vector<float> logits = random_logits(vocab, 3, 4.0f);
  for (const Combo& k : std::vector<Combo>{{0.7f, 50, 1.0f, 0.0f}, {1.0f, 0, 0.9f, 0.0f}, {1.0f, 0, 1.0f, 0.1f},
                                           {0.8f, 40, 0.8f, 0.05f}}) {
    const std::vector<double> p = exact_distribution(logits, k.t, k.top_k, k.top_p, k.min_p);
    std::set<int32_t> support;
    for (int32_t i = 0; i < vocab; ++i) {
      if (p[i] > 0) support.insert(i);
    }
    std::set<int32_t> seen;
    for (uint64_t off = 0; off < 500; ++off) {
      const SampleResult r =
          sample_token_detail(logits.data(), vocab, row_of(k.t, k.top_k, k.top_p, k.min_p, 9, off));
      EXPECT_EQ(std::set<int32_t>(r.kept.begin(), r.kept.end()), support) << "kept set, top_k " << k.top_k;
      EXPECT_TRUE(support.count(r.token)) << "token " << r.token << " not kept";
      seen.insert(r.token);
    }
    EXPECT_GT(seen.size(), 1u);
  }
}

TEST(TokenSampler, TiesAtTheCutKeepLowerIds) {
  const std::vector<float> flat(10, 1.0f);
  std::set<int32_t> seen;
  for (uint64_t off = 0; off < 2000; ++off) {
    seen.insert(sample_token(flat.data(), 10, row_of(1.0f, 3, 1.0f, 0.0f, 4, off)));
  }
  EXPECT_EQ(seen, (std::set<int32_t>{0, 1, 2}));
  // top-p 0.25 of 10 equal tokens: the first 3 (cumulative 0.3 >= 0.25).
  seen.clear();
  for (uint64_t off = 0; off < 2000; ++off) {
    seen.insert(sample_token(flat.data(), 10, row_of(1.0f, 0, 0.25f, 0.0f, 4, off)));
  }
  EXPECT_EQ(seen, (std::set<int32_t>{0, 1, 2}));
}

TEST(TokenSampler, SameSeedAndOffsetSameTokenOtherwiseTheyVary) {
  const int64_t vocab = 2000;
  const std::vector<float> logits = random_logits(vocab, 4, 0.5f);  // flat-ish: many likely tokens
  std::set<int32_t> by_offset, by_seed;
  for (uint64_t off = 0; off < 200; ++off) {
    const SamplingRow r = row_of(1.0f, 0, 0.95f, 0.0f, 12345, off);
    const int32_t a = sample_token(logits.data(), vocab, r);
    EXPECT_EQ(a, sample_token(logits.data(), vocab, r));
    by_offset.insert(a);
    by_seed.insert(sample_token(logits.data(), vocab, row_of(1.0f, 0, 0.95f, 0.0f, off, 7)));
  }
  EXPECT_GT(by_offset.size(), 150u);
  EXPECT_GT(by_seed.size(), 150u);
}

TEST(TokenSampler, CounterRngIsUniformOpenAndAPureFunction) {
  const uint64_t key = counter_rng_key(42, 3);
  EXPECT_EQ(key, counter_rng_key(42, 3));
  EXPECT_NE(key, counter_rng_key(42, 4));
  EXPECT_NE(key, counter_rng_key(43, 3));
  double sum = 0, sum_e = 0;
  float lo = 1, hi = 0;
  const int n = 1 << 20;
  for (int i = 0; i < n; ++i) {
    const float u = counter_uniform(key, i);
    ASSERT_GT(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    lo = std::min(lo, u), hi = std::max(hi, u);
    sum += u;
    sum_e += counter_exponential(key, i);
  }
  EXPECT_NEAR(sum / n, 0.5, 0.002);
  EXPECT_NEAR(sum_e / n, 1.0, 0.005);
  EXPECT_LT(lo, 1e-5f);
  EXPECT_GT(hi, 1 - 1e-5f);
  // The extreme draws stay in range and bound the Gumbel noise.
  EXPECT_GE(-std::log(kMinExponential), 23.0f);
  EXPECT_LE(-std::log(kMinExponential), kMaxGumbelNoise);
  EXPECT_LT(-std::log(-std::log1p(-0x1.fffffep-1f)), kMaxGumbelNoise);
}

TEST(TokenSampler, OrderKeysAndCompositesSortLikeTheSampler) {
  const std::vector<float> v = {-INFINITY, -1e30f, -2.5f, -1e-30f, 0.0f, 1e-30f, 1.0f, 3e38f, INFINITY};
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    EXPECT_LT(float_order_key(v[i]), float_order_key(v[i + 1])) << v[i];
    EXPECT_EQ(float_from_order_key(float_order_key(v[i])), v[i]);
  }
  EXPECT_EQ(float_order_key(sanitize_logit(-0.0f)), float_order_key(0.0f));
  EXPECT_EQ(sanitize_logit(NAN), -INFINITY);
  // Equal logits: the lower id has the larger composite.
  const uint32_t k = float_order_key(1.5f);
  EXPECT_GT(sampling_composite(k, 3), sampling_composite(k, 4));
  EXPECT_GT(sampling_composite(float_order_key(1.6f), 100000), sampling_composite(k, 0));
}

TEST(TokenSampler, MakeSamplingRowMapsTheRequestParameters) {
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_k = -1;
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  SamplingRow r = make_sampling_row(p, 99, 5);
  EXPECT_EQ(r.top_k, 0);
  EXPECT_EQ(r.temperature, 0.7f);
  EXPECT_EQ(r.top_p, 0.9f);
  EXPECT_EQ(r.min_p, 0.05f);
  EXPECT_EQ(r.seed, 99u);
  EXPECT_EQ(r.offset, 5u);
  p.top_k = int64_t{1} << 40;
  EXPECT_EQ(make_sampling_row(p, 0, 0).top_k, INT32_MAX);
}

}  // namespace
}  // namespace tessera
