#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "sample/sampler.h"

namespace tessera {
namespace {

TEST(Sampler, LogSoftmaxNormalises) {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f, -1e4f};
  std::vector<float> lp(4);
  log_softmax(logits.data(), 4, lp.data());
  double total = 0;
  for (float v : lp) total += std::exp(double(v));
  EXPECT_NEAR(total, 1.0, 1e-6);
  EXPECT_NEAR(lp[2] - lp[1], 1.0, 1e-6);
  EXPECT_NEAR(lp[2], -std::log(1 + std::exp(-1.0) + std::exp(-2.0)), 1e-6);
}

TEST(Sampler, TopLogprobsOrderAndTies) {
  const std::vector<float> lp = {-3, -1, -2, -1, -5};
  auto top = top_logprobs(lp.data(), 5, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 1);  // tie broken by lower id
  EXPECT_EQ(top[1].first, 3);
  EXPECT_EQ(top[2].first, 2);
  EXPECT_EQ(top_logprobs(lp.data(), 5, 10).size(), 5u);
}

TEST(Sampler, GreedyIsArgmax) {
  Sampler s(1);
  SamplingParams p;
  p.temperature = 0;
  const std::vector<float> logits = {0.5f, 3.0f, 3.0f, -2.0f};
  EXPECT_EQ(s.sample(logits.data(), 4, p), 1);
}

TEST(Sampler, TemperatureSamplingFollowsSoftmax) {
  Sampler s(1234);
  SamplingParams p;
  p.temperature = 1.0f;
  const std::vector<float> logits = {0.0f, std::log(3.0f), -100.0f};
  std::map<int, int> counts;
  const int n = 20000;
  for (int i = 0; i < n; ++i) counts[s.sample(logits.data(), 3, p)]++;
  EXPECT_NEAR(counts[1] / double(n), 0.75, 0.02);
  EXPECT_EQ(counts[2], 0);
}

TEST(Sampler, TopKAndTopPRestrictCandidates) {
  Sampler s(7);
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
  p.logprobs = 1000;
  EXPECT_NE(p.validate(), "");
}

}  // namespace
}  // namespace tessera
