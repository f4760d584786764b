#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include "sample/logit_adjustments.h"
#include "sample/sampler.h"
#include "sample/token_sampler.h"

namespace tessera {
namespace {

// A request's draws: token i of a request comes from (seed, offset i).
struct Draws {
  uint64_t seed;
  uint64_t offset = 0;
  int32_t sample(const float* logits, int64_t n, const SamplingParams& p) {
    return sample_token(logits, n, make_sampling_row(p, seed, offset++));
  }
};

TEST(Logprobs, LogSoftmaxNormalises) {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f, -1e4f};
  std::vector<float> lp(4);
  log_softmax(logits.data(), 4, lp.data());
  double total = 0;
  for (float v : lp) total += std::exp(double(v));
  EXPECT_NEAR(total, 1.0, 1e-6);
  EXPECT_NEAR(lp[2] - lp[1], 1.0, 1e-6);
  EXPECT_NEAR(lp[2], -std::log(1 + std::exp(-1.0) + std::exp(-2.0)), 1e-6);
}

TEST(Logprobs, TopLogprobsOrderAndTies) {
  const std::vector<float> lp = {-3, -1, -2, -1, -5};
  auto top = top_logprobs(lp.data(), 5, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 1);  // tie broken by lower id
  EXPECT_EQ(top[1].first, 3);
  EXPECT_EQ(top[2].first, 2);
  EXPECT_EQ(top_logprobs(lp.data(), 5, 10).size(), 5u);
}

TEST(SampleToken, GreedyIsArgmax) {
  Draws s{1};
  SamplingParams p;
  p.temperature = 0;
  const std::vector<float> logits = {0.5f, 3.0f, 3.0f, -2.0f};
  EXPECT_EQ(s.sample(logits.data(), 4, p), 1);
}

TEST(SampleToken, TemperatureSamplingFollowsSoftmax) {
  Draws s{1234};
  SamplingParams p;
  p.temperature = 1.0f;
  const std::vector<float> logits = {0.0f, std::log(3.0f), -100.0f};
  std::map<int, int> counts;
  const int n = 20000;
  for (int i = 0; i < n; ++i) counts[s.sample(logits.data(), 3, p)]++;
  EXPECT_NEAR(counts[1] / double(n), 0.75, 0.02);
  EXPECT_EQ(counts[2], 0);
}

TEST(SampleToken, TopKAndTopPRestrictCandidates) {
  Draws s{7};
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 2;
  const std::vector<float> logits = {1.0f, 5.0f, 4.9f, 0.0f};
  for (int i = 0; i < 500; ++i) {
    const int t = s.sample(logits.data(), 4, p);
    EXPECT_TRUE(t == 1 || t == 2);
  }
  p.top_k = -1;
  p.top_p = 0.5f;  // token 1 alone holds > 50% of the mass
  const std::vector<float> peaked = {1.0f, 8.0f, 4.0f, 0.0f};
  for (int i = 0; i < 500; ++i) EXPECT_EQ(s.sample(peaked.data(), 4, p), 1);
}

// Pearson chi-square of observed counts against expected probabilities (zero-probability
// cells must stay empty); the 0.999 quantile bounds a correct sampler's statistic.
void expect_matches_distribution(const std::vector<int>& counts, const std::vector<double>& probs, int draws,
                                 const char* what) {
  double chi2 = 0;
  int dof = -1;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] == 0) {
      EXPECT_EQ(counts[i], 0) << what << ": token " << i << " must never be drawn";
      continue;
    }
    const double e = probs[i] * draws;
    chi2 += (counts[i] - e) * (counts[i] - e) / e;
    ++dof;
  }
  // 0.999 quantiles of chi-square for 1..7 degrees of freedom.
  const double q999[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32};
  ASSERT_GE(dof, 1);
  ASSERT_LE(dof, 7);
  EXPECT_LT(chi2, q999[dof]) << what << ": chi-square " << chi2 << " with " << dof << " dof";
}

// The distribution each filter should give, computed independently from the definitions:
// p_i = softmax(logits / T); keep p_i >= min_p * max p; keep the top k; keep the smallest
// prefix (by p) whose renormalized mass reaches top_p; renormalize.
std::vector<double> expected_probs(const std::vector<float>& logits, const SamplingParams& sp) {
  const size_t n = logits.size();
  std::vector<double> p(n);
  double z = 0;
  for (size_t i = 0; i < n; ++i) z += p[i] = std::exp(double(logits[i]) / sp.temperature);
  for (auto& v : p) v /= z;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  std::vector<bool> keep(n, true);
  const double pmax = p[order[0]];
  for (size_t i = 0; i < n; ++i) keep[i] = p[i] >= sp.min_p * pmax;
  if (sp.top_k > 0) {
    for (size_t r = static_cast<size_t>(sp.top_k); r < n; ++r) keep[order[r]] = false;
  }
  double kept = 0;
  for (size_t i = 0; i < n; ++i) kept += keep[i] ? p[i] : 0;
  double acc = 0;
  bool reached = false;
  for (size_t r = 0; r < n; ++r) {
    const size_t i = order[r];
    if (!keep[i]) continue;
    if (reached) {
      keep[i] = false;
      continue;
    }
    acc += p[i] / kept;
    if (acc >= sp.top_p) reached = true;
  }
  std::vector<double> out(n, 0.0);
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += keep[i] ? p[i] : 0;
  for (size_t i = 0; i < n; ++i) out[i] = keep[i] ? p[i] / total : 0;
  return out;
}

TEST(SampleToken, FrequenciesMatchTheDefinitionsOver20000Draws) {
  const std::vector<float> logits = {2.0f, 1.5f, 1.0f, 0.5f, 0.0f, -0.5f, -1.0f, -3.0f};
  struct Setting {
    const char* name;
    float temperature, top_p, min_p;
    int64_t top_k;
  };
  const Setting settings[] = {{"temperature 0.7", 0.7f, 1.0f, 0.0f, -1}, {"temperature 1.5", 1.5f, 1.0f, 0.0f, -1},
                              {"top-k 3", 1.0f, 1.0f, 0.0f, 3},          {"top-p 0.8", 1.0f, 0.8f, 0.0f, -1},
                              {"min-p 0.2", 1.0f, 1.0f, 0.2f, -1},       {"all four", 0.9f, 0.9f, 0.05f, 5}};
  for (const Setting& st : settings) {
    SamplingParams p;
    p.temperature = st.temperature;
    p.top_p = st.top_p;
    p.min_p = st.min_p;
    p.top_k = st.top_k;
    Draws s{99};
    const int draws = 20000;
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < draws; ++i) counts[s.sample(logits.data(), static_cast<int64_t>(logits.size()), p)]++;
    expect_matches_distribution(counts, expected_probs(logits, p), draws, st.name);
  }
}

TEST(SampleToken, SameSeedSameStream) {
  const std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.4f};
  SamplingParams p;
  Draws a{5}, b{5}, c{6};
  std::vector<int> sa, sb, sc;
  for (int i = 0; i < 50; ++i) {
    sa.push_back(a.sample(logits.data(), 4, p));
    sb.push_back(b.sample(logits.data(), 4, p));
    sc.push_back(c.sample(logits.data(), 4, p));
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc);
}

TEST(ProcessLogits, BiasMinTokensAndPenaltiesAsSpecified) {
  const std::vector<int32_t> prompt = {0, 1};
  const std::vector<int32_t> output = {1, 3, 3, 4};
  const std::vector<int32_t> eos = {5};
  SamplingParams p;
  p.logit_bias = {{2, 1.5f}, {99, 3.0f}};  // ids past the vocabulary are ignored
  p.repetition_penalty = 2.0f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  p.min_tokens = 5;
  p.stop_token_ids = {6};
  std::vector<float> l = {1.0f, -1.0f, 0.5f, 2.0f, -4.0f, 3.0f, 1.0f, 0.0f};
  process_logits(l.data(), static_cast<int64_t>(l.size()), p, prompt, output, eos);
  EXPECT_FLOAT_EQ(l[0], 1.0f / 2.0f);                    // in prompt, positive: halved
  EXPECT_FLOAT_EQ(l[1], -1.0f * 2.0f - 0.5f - 0.25f);    // prompt+output, negative: doubled; once in output
  EXPECT_FLOAT_EQ(l[2], 0.5f + 1.5f);                    // bias only
  EXPECT_FLOAT_EQ(l[3], 2.0f / 2.0f - 2 * 0.5f - 0.25f); // twice in output
  EXPECT_FLOAT_EQ(l[4], -4.0f * 2.0f - 0.5f - 0.25f);
  EXPECT_EQ(l[5], -INFINITY);  // EOS masked: 4 < min_tokens
  EXPECT_EQ(l[6], -INFINITY);  // stop token masked too
  EXPECT_FLOAT_EQ(l[7], 0.0f);
  // Once min_tokens are out, EOS is free again.
  std::vector<float> l2 = {0, 0, 0, 0, 0, 3.0f, 1.0f, 0};
  const std::vector<int32_t> five = {7, 7, 7, 7, 7};
  SamplingParams q;
  q.min_tokens = 5;
  process_logits(l2.data(), 8, q, prompt, five, eos);
  EXPECT_EQ(l2[5], 3.0f);
}

TEST(ProcessLogits, BadWordsMaskTheirLastTokenAfterTheirPrefix) {
  SamplingParams p;
  p.bad_words_token_ids = {{2}, {4, 5}, {1, 3, 6}, {7, 7}};
  EXPECT_TRUE(adjustments_read_output(p));
  const std::vector<int32_t> prompt = {4};
  auto masked = [&](std::vector<int32_t> output) {
    std::vector<float> l(8, 1.0f);
    process_logits(l.data(), 8, p, prompt, output, {});
    std::vector<int32_t> ids;
    for (int32_t i = 0; i < 8; ++i) {
      if (l[i] == -INFINITY) ids.push_back(i);
      else EXPECT_EQ(l[i], 1.0f);
    }
    return ids;
  };
  EXPECT_EQ(masked({}), (std::vector<int32_t>{2}));              // one-token words always; the prompt never counts
  EXPECT_EQ(masked({0, 4}), (std::vector<int32_t>{2, 5}));       // after 4: no 5
  EXPECT_EQ(masked({1, 3}), (std::vector<int32_t>{2, 6}));       // after 1 3: no 6
  EXPECT_EQ(masked({3, 1}), (std::vector<int32_t>{2}));          // order matters
  EXPECT_EQ(masked({7}), (std::vector<int32_t>{2, 7}));          // no 7 right after a 7
  EXPECT_EQ(masked({4, 1, 3}), (std::vector<int32_t>{2, 6}));    // only the output's end counts
  SamplingParams one;
  one.bad_words_token_ids = {{2}};
  EXPECT_FALSE(adjustments_read_output(one));  // static masks: no need to see the output
}

TEST(ProcessLogits, AllowedTokenIdsMaskEveryOtherToken) {
  SamplingParams p;
  p.allowed_token_ids = {1, 3, 3, 99};  // repeats and ids past the vocabulary are harmless
  p.logit_bias = {{3, 0.5f}, {4, 2.0f}};
  std::vector<float> l(6, 1.0f);
  process_logits(l.data(), 6, p, {}, {}, {});
  EXPECT_EQ(l, (std::vector<float>{-INFINITY, 1.0f, -INFINITY, 1.5f, -INFINITY, -INFINITY}));
  EXPECT_FALSE(adjustments_read_output(p));
}

TEST(ProcessLogits, MinTokensNeverMasksTheLastAllowedTokens) {
  // Every allowed token is a stop token: min_tokens yields, the allowed set holds.
  SamplingParams p;
  p.allowed_token_ids = {2, 5};
  p.stop_token_ids = {2};
  p.min_tokens = 3;
  p.logit_bias = {{5, 0.5f}};
  const std::vector<int32_t> eos = {5};
  std::vector<float> l(6, 1.0f);
  process_logits(l.data(), 6, p, {}, {}, eos);
  EXPECT_EQ(l, (std::vector<float>{-INFINITY, -INFINITY, 1.0f, -INFINITY, -INFINITY, 1.5f}));
  // An allowed token that is not a stop token stays the only choice.
  p.allowed_token_ids = {2, 4, 5};
  std::vector<float> m(6, 1.0f);
  process_logits(m.data(), 6, p, {}, {}, eos);
  EXPECT_EQ(m, (std::vector<float>{-INFINITY, -INFINITY, -INFINITY, -INFINITY, 1.0f, -INFINITY}));
  // Bad words yield the same way.
  SamplingParams b;
  b.allowed_token_ids = {3};
  b.bad_words_token_ids = {{3}};
  std::vector<float> n(6, 1.0f);
  process_logits(n.data(), 6, b, {}, {}, {});
  EXPECT_EQ(n, (std::vector<float>{-INFINITY, -INFINITY, -INFINITY, 1.0f, -INFINITY, -INFINITY}));
}

TEST(SamplingParams, Validation) {
  SamplingParams p;
  EXPECT_EQ(p.validate(), "");
  p.max_tokens = 0;
  EXPECT_NE(p.validate(), "");
  p.max_tokens = INT64_MAX;  // would overflow prompt + max_tokens
  EXPECT_NE(p.validate(), "");
  p = {};
  p.temperature = -1;
  EXPECT_NE(p.validate(), "");
  p = {};
  p.top_p = 0;
  EXPECT_NE(p.validate(), "");
  p = {};
  p.logprobs = -1;
  EXPECT_NE(p.validate(), "");
  p = {};
  p.logprobs = 1000;  // the vocabulary bounds it (validate_request), not SamplingParams
  EXPECT_EQ(p.validate(), "");
  for (auto bad : {+[](SamplingParams& q) { q.n = 0; }, +[](SamplingParams& q) { q.min_p = 1.5f; },
                   +[](SamplingParams& q) { q.presence_penalty = 3; }, +[](SamplingParams& q) { q.repetition_penalty = 0; },
                   +[](SamplingParams& q) { q.min_tokens = 100; }, +[](SamplingParams& q) { q.logit_bias[-1] = 1; },
                   +[](SamplingParams& q) { q.stop = {""}; }, +[](SamplingParams& q) { q.stop_token_ids = {-3}; },
                   +[](SamplingParams& q) { q.bad_words = {" "}; },
                   +[](SamplingParams& q) { q.allowed_token_ids = {2, -5}; },
                   +[](SamplingParams& q) { q.bad_words_token_ids = {{}}; },
                   +[](SamplingParams& q) { q.bad_words_token_ids = {{3, -1}}; }}) {
    SamplingParams q;
    bad(q);
    EXPECT_NE(q.validate(), "");
  }
}

}  // namespace
}  // namespace tessera
