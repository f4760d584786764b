// BeamSearchState (src/engine/beam_search_state.h) on hand-made logprobs, no model: which
// beams live on, which finish, how the result is ranked (vLLM's beam search).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/beam_search_state.h"

namespace tessera {
namespace {

constexpr int32_t kEos = 2;

BeamSearchParams params(int64_t width, int64_t max_tokens, double length_penalty = 1.0, bool ignore_eos = false) {
  BeamSearchParams p;
  p.beam_width = width;
  p.max_tokens = max_tokens;
  p.length_penalty = length_penalty;
  p.ignore_eos = ignore_eos;
  return p;
}

std::vector<int32_t> outputs(const BeamSequence& s) { return s.output_token_ids; }

TEST(BeamSearchState, StepParamsAskForTwiceTheWidthCappedAtTwenty) {
  BeamSearchParams p = params(3, 8);
  p.temperature = 0.5f;
  SamplingParams s = BeamSearchState::step_params(p);
  EXPECT_EQ(s.max_tokens, 1);
  EXPECT_EQ(s.logprobs, 6);
  EXPECT_TRUE(s.ignore_eos);
  EXPECT_FLOAT_EQ(s.temperature, 0.5f);
  EXPECT_EQ(BeamSearchState::step_params(params(64, 8)).logprobs, 20);
}

TEST(BeamSearchState, ValidateBoundsTheWidth) {
  EXPECT_EQ(BeamSearchState::validate(params(1, 1)), "");
  EXPECT_EQ(BeamSearchState::validate(params(64, 1)), "");
  EXPECT_NE(BeamSearchState::validate(params(0, 1)), "");
  EXPECT_NE(BeamSearchState::validate(params(65, 1)), "");
  EXPECT_NE(BeamSearchState::validate(params(2, 0)), "");
  EXPECT_NE(BeamSearchState::validate(params(2, 4, NAN)), "");
}

TEST(BeamSearchState, KeepsTheBestCandidatesAcrossBeams) {
  BeamSearchState s({7, 8}, params(2, 3), {kEos});
  ASSERT_EQ(s.num_live(), 1u);
  EXPECT_EQ(s.live_token_ids(0), (std::vector<int32_t>{7, 8}));
  s.advance({{{10, -0.1f}, {11, -0.5f}, {12, -3.0f}, {13, -4.0f}}});
  ASSERT_EQ(s.num_live(), 2u);
  EXPECT_EQ(s.live_token_ids(0), (std::vector<int32_t>{7, 8, 10}));
  EXPECT_EQ(s.live_token_ids(1), (std::vector<int32_t>{7, 8, 11}));
  // Beam 0 (-0.1) + -2.0 = -2.1, + -2.5 = -2.6; beam 1 (-0.5) + -0.2 = -0.7, + -1.0 = -1.5:
  // both kept beams descend from the second.
  s.advance({{{20, -2.0f}, {21, -2.5f}, {22, -5.0f}, {23, -6.0f}},
             {{30, -0.2f}, {31, -1.0f}, {32, -5.0f}, {33, -6.0f}}});
  ASSERT_EQ(s.num_live(), 2u);
  EXPECT_EQ(s.live_token_ids(0), (std::vector<int32_t>{7, 8, 11, 30}));
  EXPECT_EQ(s.live_token_ids(1), (std::vector<int32_t>{7, 8, 11, 31}));
  EXPECT_FALSE(s.done());
  s.advance({{{40, -0.1f}, {41, -0.2f}, {42, -0.3f}, {43, -0.4f}},
             {{50, -0.1f}, {51, -0.2f}, {52, -0.3f}, {53, -0.4f}}});
  EXPECT_TRUE(s.done());
  EXPECT_EQ(s.steps(), 3);
  const auto best = s.take_best();
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(outputs(best[0]), (std::vector<int32_t>{11, 30, 40}));
  EXPECT_EQ(outputs(best[1]), (std::vector<int32_t>{11, 30, 41}));
  EXPECT_NEAR(best[0].cum_logprob, -0.5 - 0.2 - 0.1, 1e-6);
  EXPECT_FALSE(best[0].finished_by_eos);
  // Each token's step candidates, in order.
  ASSERT_EQ(best[0].logprobs.size(), 3u);
  EXPECT_EQ(best[0].logprobs[0][1].first, 11);
  EXPECT_EQ(best[0].logprobs[1][0].first, 30);
  EXPECT_EQ(best[0].logprobs[2][0].first, 40);
  EXPECT_EQ(best[0].token_ids, (std::vector<int32_t>{7, 8, 11, 30, 40}));
}

TEST(BeamSearchState, WidthOneFollowsTheTopToken) {
  BeamSearchState s({1}, params(1, 4), {kEos});
  for (int32_t t = 0; t < 4; ++t) s.advance({{{100 + t, -1.0f}, {200 + t, -2.0f}}});
  const auto best = s.take_best();
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(outputs(best[0]), (std::vector<int32_t>{100, 101, 102, 103}));
}

TEST(BeamSearchState, EveryEosCandidateFinishesAndTheLiveBeamsStayFull) {
  BeamSearchState s({1, 1, 1}, params(2, 5), {kEos});
  // EOS ranks third: it still finishes (vLLM sets every EOS candidate aside), and the two
  // live beams are the best two others.
  s.advance({{{10, -0.1f}, {11, -0.2f}, {kEos, -0.3f}, {12, -0.4f}}});
  ASSERT_EQ(s.num_live(), 2u);
  EXPECT_EQ(s.live_token_ids(0).back(), 10);
  EXPECT_EQ(s.live_token_ids(1).back(), 11);
  // The best candidate is EOS: it finishes, the next two live on.
  s.advance({{{kEos, -0.05f}, {20, -3.0f}, {21, -3.1f}, {22, -9.0f}},
             {{30, -2.0f}, {31, -2.5f}, {32, -9.0f}, {33, -9.5f}}});
  ASSERT_EQ(s.num_live(), 2u);
  EXPECT_EQ(s.live_token_ids(0), (std::vector<int32_t>{1, 1, 1, 11, 30}));
  EXPECT_EQ(s.live_token_ids(1), (std::vector<int32_t>{1, 1, 1, 11, 31}));
  const PositionLogprobs low = {{40, -5.0f}, {41, -6.0f}, {42, -7.0f}, {43, -8.0f}};
  for (int step = 0; step < 3; ++step) s.advance({low, low});
  ASSERT_TRUE(s.done());
  const auto best = s.take_best();
  ASSERT_EQ(best.size(), 2u);
  // Scores: [1,1,1,10,EOS] -0.15/4; [1,1,1,EOS] -0.3/3; the long live beams are far lower.
  EXPECT_EQ(outputs(best[0]), (std::vector<int32_t>{10, kEos}));
  EXPECT_TRUE(best[0].finished_by_eos);
  EXPECT_EQ(best[0].logprobs.size(), 2u);
  EXPECT_EQ(outputs(best[1]), (std::vector<int32_t>{kEos}));
  EXPECT_TRUE(best[1].finished_by_eos);
}

TEST(BeamSearchState, IgnoreEosKeepsEosBeamsAlive) {
  BeamSearchState s({1}, params(2, 2, 1.0, /*ignore_eos=*/true), {kEos});
  s.advance({{{kEos, -0.1f}, {10, -0.2f}, {11, -0.3f}, {12, -0.4f}}});
  ASSERT_EQ(s.num_live(), 2u);
  EXPECT_EQ(s.live_token_ids(0).back(), kEos);
  s.advance({{{20, -0.1f}, {21, -0.2f}}, {{30, -0.1f}, {31, -0.2f}}});
  const auto best = s.take_best();
  ASSERT_EQ(best.size(), 2u);
  EXPECT_FALSE(best[0].finished_by_eos);
  EXPECT_EQ(outputs(best[0]), (std::vector<int32_t>{kEos, 20}));
}

TEST(BeamSearchState, ScoreCountsThePromptAndNotAFinalEos) {
  const std::vector<int32_t> eos = {kEos};
  EXPECT_DOUBLE_EQ(beam_search_score({5, 6, 7, 8}, -2.0, 1.0, eos), -0.5);
  EXPECT_DOUBLE_EQ(beam_search_score({5, 6, 7, kEos}, -3.0, 1.0, eos), -1.0);
  EXPECT_DOUBLE_EQ(beam_search_score({5, 6, 7, 8}, -2.0, 0.0, eos), -2.0);
  EXPECT_DOUBLE_EQ(beam_search_score({5, 6, 7, 8}, -2.0, 2.0, eos), -2.0 / 16);
  EXPECT_DOUBLE_EQ(beam_search_score({kEos}, -1.0, 1.0, eos), -1.0);  // never divides by 0
}

// A short finished beam against a long one of lower cumulative logprob: the length penalty
// decides which comes first.
TEST(BeamSearchState, LengthPenaltyDecidesBetweenShortAndLong) {
  auto run = [](double length_penalty) {
    BeamSearchState s({1, 1}, params(1, 4, length_penalty), {kEos});
    s.advance({{{10, -0.5f}, {kEos, -1.0f}}});           // [1,1,EOS] finishes at -1.0
    s.advance({{{11, -0.3f}, {12, -4.0f}}});
    s.advance({{{13, -0.3f}, {14, -4.0f}}});
    s.advance({{{15, -0.3f}, {16, -4.0f}}});             // [1,1,10,11,13,15] at -1.4
    return s.take_best();
  };
  // len^0 = 1: cumulative logprob alone, the short one wins (-1.0 > -1.4).
  const auto flat = run(0.0);
  ASSERT_EQ(flat.size(), 1u);
  EXPECT_TRUE(flat[0].finished_by_eos);
  // len^1: -1.0 / 2 = -0.5 against -1.4 / 6 = -0.233: the long one wins.
  const auto linear = run(1.0);
  ASSERT_EQ(linear.size(), 1u);
  EXPECT_FALSE(linear[0].finished_by_eos);
  EXPECT_EQ(outputs(linear[0]), (std::vector<int32_t>{10, 11, 13, 15}));
}

TEST(BeamSearchState, BeamsWithoutCandidatesDropAndTheSearchEnds) {
  BeamSearchState s({1}, params(2, 10), {kEos});
  s.advance({{{10, -0.1f}, {11, -0.2f}, {12, -0.3f}}});
  ASSERT_EQ(s.num_live(), 2u);
  s.advance({{}, {{20, -0.1f}}});  // beam 0's request failed
  ASSERT_EQ(s.num_live(), 1u);
  EXPECT_EQ(s.live_token_ids(0), (std::vector<int32_t>{1, 11, 20}));
  s.advance({{}});
  EXPECT_TRUE(s.done());
  EXPECT_TRUE(s.take_best().empty());
}

TEST(BeamSearchState, NoMoreThanMaxTokensSteps) {
  BeamSearchState s({1}, params(2, 2), {kEos});
  s.advance({{{10, -0.1f}, {11, -0.2f}}});
  s.advance({{{20, -0.1f}}, {{30, -0.1f}}});
  ASSERT_TRUE(s.done());
  s.advance({{{40, -0.1f}}, {{50, -0.1f}}});  // ignored
  EXPECT_EQ(s.steps(), 2);
  for (const BeamSequence& b : s.take_best()) EXPECT_EQ(b.output_token_ids.size(), 2u);
}

}  // namespace
}  // namespace tessera
