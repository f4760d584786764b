// Reasoning parsers: a table of replies, each checked whole (extract) and streamed at every
// 1-byte split and at random 1-9 byte splits, under real prompt tails rendered by
// tools/reference/make_reasoning_cases.py (tests/data/reasoning/prompt_tails.json).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/test_paths.h"
#include "server/reasoning/reasoning_parser.h"

namespace tessera::server {
namespace {

using Opt = std::optional<std::string>;

constexpr size_t kNever = std::numeric_limits<size_t>::max();      // reasoning never ends
constexpr size_t kAtFinish = std::numeric_limits<size_t>::max() - 1;  // ends at finish()

struct PromptCase {
  std::string tail;
  std::string prompt;
  std::string think;  // "open", "closed", "none"
};

const std::map<std::string, PromptCase>& prompts() {
  static const std::map<std::string, PromptCase> cases = [] {
    std::map<std::string, PromptCase> out;
    const std::string path = testing::test_data() + "/reasoning/prompt_tails.json";
    std::ifstream in(path);
    if (!in) return out;
    const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object() || !doc.contains("cases")) return out;
    for (const auto& c : doc.at("cases")) {
      out[c.at("name").get<std::string>()] = {c.at("tail").get<std::string>(), c.at("prompt").get<std::string>(),
                                              c.at("think").get<std::string>()};
    }
    return out;
  }();
  return cases;
}

struct Case {
  std::string parser;
  std::string prompt;  // a name in prompt_tails.json; "" for an empty tail
  std::string output;
  Opt reasoning;
  Opt content;
  size_t ended_at;  // reasoning_ended() once this many bytes are fed; kNever, kAtFinish
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << c.parser << " [" << c.prompt << "] " << ::testing::PrintToString(c.output);
}

// Bytes up to and including the first "</think>".
size_t after_end(const std::string& s) { return s.find("</think>") + 8; }

std::vector<Case> cases() {
  std::vector<Case> v;
  // ended_at defaults to right after the first "</think>" (never without one).
  auto add = [&](std::string parser, std::string prompt, std::string output, Opt reasoning, Opt content,
                 std::optional<size_t> ended_at = std::nullopt) {
    const size_t at = ended_at ? *ended_at : output.find("</think>") == std::string::npos ? kNever : after_end(output);
    v.push_back({std::move(parser), std::move(prompt), std::move(output), std::move(reasoning), std::move(content),
                 at});
  };
  const Opt none;
  // deepseek_r1: reasoning first, <think> optional, no </think> -> all reasoning (vLLM).
  for (const std::string p : {"r1_distill_qwen_single", "r1_distill_llama_single", "r1_distill_qwen_multi_turn", ""}) {
    add("deepseek_r1", p, "Let me think.\n</think>\n\nThe answer is 4.", "Let me think.\n", "\n\nThe answer is 4.");
    add("deepseek_r1", p, "<think>\nLet me think.\n</think>\n\n4", "\nLet me think.\n", "\n\n4");
    add("deepseek_r1", p, "Still thinking, cut off", "Still thinking, cut off", none);
  }
  const std::string r1 = "r1_distill_qwen_single";
  add("deepseek_r1", r1, "Done.</think>", "Done.", none);
  add("deepseek_r1", r1, "</think>Just the answer.", none, "Just the answer.");
  add("deepseek_r1", r1, "", none, none);
  add("deepseek_r1", r1, "<think>", none, none);
  add("deepseek_r1", r1, "<think></think>", none, none);
  add("deepseek_r1", r1, "a < b, </thin and <thinker> are text</think>x", "a < b, </thin and <thinker> are text", "x");
  add("deepseek_r1", r1, "r</think>c</think><think>d", "r", "c</think><think>d");  // only the first ends it
  add("deepseek_r1", r1, "x<think>y</think>z", "xy", "z");                          // vLLM drops "x" whole
  add("deepseek_r1", r1, "<think>a<think>b</think>c", "a<think>b", "c");             // one <think> dropped
  add("deepseek_r1", r1, "\xff\xfe</think>\xc3", "\xff\xfe", "\xc3");                // bytes pass through
  add("deepseek_r1", r1, "思考一下</think>答案是 4", "思考一下", "答案是 4");
  add("deepseek_r1", r1, "ends in a partial </thi", "ends in a partial </thi", none);
  add("deepseek_r1", r1, "<<</</t</think><<", "<<</</t", "<<");
  // deepseek_r1 after a closed block: all content, markers verbatim.
  for (const std::string p : {"qwen3_thinking_false", "deepseek_v31_no_thinking"}) {
    add("deepseek_r1", p, "<think>x</think>y", none, "<think>x</think>y", 0);
    add("deepseek_r1", p, "Plain answer.", none, "Plain answer.", 0);
  }

  // qwen3, no think tag in the prompt: a leading <think> opens reasoning, else all content.
  for (const std::string p : {"qwen3_default", "qwen3_thinking_true", "qwen3_tool_loop", ""}) {
    add("qwen3", p, "<think>\nhmm\n</think>\n\n4", "\nhmm\n", "\n\n4");
    add("qwen3", p, "The answer is 4.", none, "The answer is 4.", 1);
    add("qwen3", p, "<think>\ntruncated", "\ntruncated", none);
  }
  const std::string q = "qwen3_default";
  add("qwen3", q, "4", none, "4", 1);
  add("qwen3", q, "\n\n<think>a</think>b", "a", "b");  // whitespace before <think> dropped, as in vLLM
  add("qwen3", q, "<thinking>x", none, "<thinking>x", 7);
  add("qwen3", q, "  <tool_call>{}", none, "  <tool_call>{}", 5);
  add("qwen3", q, "abc</think>def", none, "abc</think>def", 1);  // vLLM: both markers or none
  add("qwen3", q, "Hi <think>a</think>b", none, "Hi <think>a</think>b", 1);
  add("qwen3", q, " \n ", none, " \n ", kAtFinish);
  add("qwen3", q, "", none, none, kAtFinish);
  add("qwen3", q, "<thin", none, "<thin", kAtFinish);
  add("qwen3", q, "<think>", none, none);
  add("qwen3", q, "<think></think>", none, none);
  add("qwen3", q, "<think>a</think>b</think>c<think>", "a", "b</think>c<think>");
  // qwen3, enable_thinking=false: all content.
  for (const std::string p : {"qwen3_thinking_false", "qwen3_thinking_false_multi_turn"}) {
    add("qwen3", p, "The answer is 4.", none, "The answer is 4.", 0);
    add("qwen3", p, "<think>x</think>y", none, "<think>x</think>y", 0);
  }
  // qwen3 2507 thinking: the prompt opened the block.
  const std::string q2507 = "qwen3_2507_thinking";
  add("qwen3", q2507, "hmm\n</think>\n\n4", "hmm\n", "\n\n4");
  add("qwen3", q2507, "<think>\nhmm</think>4", "\nhmm", "4");
  add("qwen3", q2507, "Hi <think>a</think>b", "Hi a", "b");
  add("qwen3", q2507, "cut off", "cut off", none);

  // deepseek_v3: R1 when the prompt opened the block, else plain content.
  add("deepseek_v3", "deepseek_v31_thinking", "a\n</think>\n\nb", "a\n", "\n\nb");
  add("deepseek_v3", "deepseek_v31_thinking", "no end", "no end", none);
  for (const std::string p : {"deepseek_v31_no_thinking", "deepseek_v3_multi_turn", "qwen3_default", ""}) {
    add("deepseek_v3", p, "<think>a</think>b", none, "<think>a</think>b", 0);
    add("deepseek_v3", p, "plain", none, "plain", 0);
  }
  return v;
}

struct Streamed {
  std::string reasoning;
  std::string content;
};

void collect(const ReasoningSplit& s, Streamed& out) {
  // Empty strings come as nullopt.
  EXPECT_TRUE(!s.reasoning || !s.reasoning->empty());
  EXPECT_TRUE(!s.content || !s.content->empty());
  if (s.reasoning) out.reasoning += *s.reasoning;
  if (s.content) out.content += *s.content;
}

bool ended_after(const Case& c, size_t fed) {
  return c.ended_at != kNever && c.ended_at != kAtFinish && fed >= c.ended_at;
}

void check_piece_has_no_marker(const Case& c, const ReasoningSplit& s) {
  // A marker may only show up on a side whose expected text carries it verbatim.
  for (const char* m : {"<think>", "</think>"}) {
    if (s.reasoning && s.reasoning->find(m) != std::string::npos) {
      EXPECT_NE(c.reasoning.value_or("").find(m), std::string::npos) << c;
    }
    if (s.content && s.content->find(m) != std::string::npos) {
      EXPECT_NE(c.content.value_or("").find(m), std::string::npos) << c;
    }
  }
}

// Streams c.output cut at `cuts` (ascending offsets) and checks everything along the way.
void check_stream(const Case& c, const std::string& prompt_tail, const std::vector<size_t>& cuts) {
  auto parser = make_reasoning_parser(c.parser, prompt_tail);
  ASSERT_NE(parser, nullptr);
  EXPECT_EQ(parser->reasoning_ended(), ended_after(c, 0)) << c;
  Streamed got;
  size_t from = 0;
  for (size_t to : cuts) {
    const ReasoningSplit s = parser->feed(std::string_view(c.output).substr(from, to - from));
    check_piece_has_no_marker(c, s);
    collect(s, got);
    from = to;
    ASSERT_EQ(parser->reasoning_ended(), ended_after(c, to)) << c << " after " << to << " bytes";
    // Released text is final: always a prefix of the whole-reply split.
    ASSERT_TRUE(c.reasoning.value_or("").starts_with(got.reasoning)) << c << " after " << to << " bytes";
    ASSERT_TRUE(c.content.value_or("").starts_with(got.content)) << c << " after " << to << " bytes";
  }
  const ReasoningSplit s = parser->finish();
  check_piece_has_no_marker(c, s);
  collect(s, got);
  EXPECT_EQ(got.reasoning, c.reasoning.value_or("")) << c;
  EXPECT_EQ(got.content, c.content.value_or("")) << c;
  EXPECT_EQ(parser->reasoning_ended(), c.ended_at != kNever) << c;
}

std::string tail_of(const std::string& name) { return name.empty() ? "" : prompts().at(name).tail; }

TEST(ReasoningParsers, PromptTailsRendered) {
  ASSERT_FALSE(prompts().empty()) << "missing " << testing::test_data() << "/reasoning/prompt_tails.json";
  for (const Case& c : cases()) {
    if (!c.prompt.empty()) {
      EXPECT_EQ(prompts().count(c.prompt), 1u) << c;
    }
  }
}

TEST(ReasoningParsers, Extract) {
  ASSERT_FALSE(prompts().empty());
  for (const Case& c : cases()) {
    // The tail after the assistant header and the whole prompt must mean the same.
    std::vector<std::string> tails = {tail_of(c.prompt)};
    if (!c.prompt.empty()) tails.push_back(prompts().at(c.prompt).prompt);
    for (const std::string& tail : tails) {
      auto parser = make_reasoning_parser(c.parser, tail);
      ASSERT_NE(parser, nullptr) << c;
      const ReasoningSplit s = parser->extract(c.output);
      EXPECT_EQ(s.reasoning, c.reasoning) << c;
      EXPECT_EQ(s.content, c.content) << c;
      EXPECT_EQ(parser->reasoning_ended(), ended_after(c, 0)) << "extract() must not move the stream: " << c;
    }
  }
}

TEST(ReasoningParsers, StreamEveryByte) {
  ASSERT_FALSE(prompts().empty());
  for (const Case& c : cases()) {
    std::vector<size_t> cuts;
    for (size_t i = 1; i <= c.output.size(); ++i) cuts.push_back(i);
    check_stream(c, tail_of(c.prompt), cuts);
    if (!c.prompt.empty()) check_stream(c, prompts().at(c.prompt).prompt, cuts);
  }
}

TEST(ReasoningParsers, StreamRandomSplits) {
  ASSERT_FALSE(prompts().empty());
  std::mt19937 rng(20250710);
  std::uniform_int_distribution<size_t> step(1, 9);
  for (const Case& c : cases()) {
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<size_t> cuts;
      for (size_t at = 0; at < c.output.size();) {
        at = std::min(c.output.size(), at + step(rng));
        cuts.push_back(at);
      }
      check_stream(c, tail_of(c.prompt), cuts);
    }
  }
}

TEST(ReasoningParsers, WholeReplyInOneFeed) {
  ASSERT_FALSE(prompts().empty());
  for (const Case& c : cases()) check_stream(c, tail_of(c.prompt), {c.output.size()});
}

TEST(ReasoningParsers, PromptTailStates) {
  ASSERT_FALSE(prompts().empty());
  // The qwen3 parser shows each state: open -> reasoning, closed -> content from the start,
  // none -> decided by the reply.
  for (const auto& [name, p] : prompts()) {
    for (const std::string& tail : {p.tail, p.prompt}) {
      auto parser = make_reasoning_parser("qwen3", tail);
      ASSERT_NE(parser, nullptr);
      const ReasoningSplit s = parser->extract("x");
      if (p.think == "open") {
        EXPECT_EQ(s.reasoning, Opt("x")) << name;
        EXPECT_FALSE(parser->reasoning_ended()) << name;
      } else if (p.think == "closed") {
        EXPECT_EQ(s.content, Opt("x")) << name;
        EXPECT_TRUE(parser->reasoning_ended()) << name;
      } else {
        EXPECT_EQ(p.think, "none") << name;
        EXPECT_EQ(s.content, Opt("x")) << name;
        EXPECT_FALSE(parser->reasoning_ended()) << name;
        EXPECT_EQ(parser->extract("<think>x").reasoning, Opt("x")) << name;
      }
    }
  }
}

TEST(ReasoningParsers, Registry) {
  const std::vector<std::string> names = reasoning_parser_names();
  EXPECT_EQ(names, (std::vector<std::string>{"deepseek_r1", "deepseek_v3", "qwen3"}));
  for (const std::string& name : names) {
    auto parser = make_reasoning_parser(name, "");
    ASSERT_NE(parser, nullptr) << name;
    EXPECT_EQ(parser->end_marker(), "</think>");
  }
  EXPECT_EQ(make_reasoning_parser("granite", ""), nullptr);
  EXPECT_EQ(make_reasoning_parser("", ""), nullptr);
  EXPECT_EQ(make_reasoning_parser("DeepSeek_R1", ""), nullptr);
}

TEST(ReasoningParsers, FeedAfterFinishAndEmptyDeltas) {
  auto parser = make_reasoning_parser("deepseek_r1", "<think>\n");
  EXPECT_FALSE(parser->feed("").reasoning);
  EXPECT_EQ(parser->feed("a</th").reasoning, Opt("a"));
  EXPECT_FALSE(parser->feed("").reasoning);
  const ReasoningSplit s = parser->feed("ink>b");
  EXPECT_FALSE(s.reasoning);
  EXPECT_EQ(s.content, Opt("b"));
  EXPECT_TRUE(parser->reasoning_ended());
  EXPECT_FALSE(parser->finish().content);
  EXPECT_EQ(parser->feed("c").content, Opt("c"));
}

TEST(ReasoningParsers, HugeInputs) {
  // Long reasoning, a marker in the middle, streamed in 4 KiB pieces and whole.
  const std::string think(8u << 20, 'r');
  const std::string answer(1u << 20, 'c');
  const std::string reply = "<think>" + think + "</think>" + answer;
  auto parser = make_reasoning_parser("qwen3", "");
  const ReasoningSplit whole = parser->extract(reply);
  EXPECT_EQ(whole.reasoning, Opt(think));
  EXPECT_EQ(whole.content, Opt(answer));
  Streamed got;
  for (size_t at = 0; at < reply.size(); at += 4096) {
    collect(parser->feed(std::string_view(reply).substr(at, 4096)), got);
  }
  collect(parser->finish(), got);
  EXPECT_EQ(got.reasoning, think);
  EXPECT_EQ(got.content, answer);

  // A long run of leading whitespace is held while qwen3 waits for <think>; one byte at a
  // time must stay linear.
  auto q = make_reasoning_parser("qwen3", "");
  const std::string blank(1u << 20, ' ');
  Streamed held;
  for (char ch : blank) collect(q->feed(std::string_view(&ch, 1)), held);
  EXPECT_TRUE(held.content.empty());
  collect(q->feed("<think>x"), held);
  EXPECT_EQ(held.reasoning, "x");
  EXPECT_TRUE(held.content.empty());

  // Many near-markers, byte by byte.
  std::string tricky;
  for (int i = 0; i < 100000; ++i) tricky += "</thin<thin<";
  auto r1 = make_reasoning_parser("deepseek_r1", "");
  Streamed near;
  for (char ch : tricky) collect(r1->feed(std::string_view(&ch, 1)), near);
  collect(r1->finish(), near);
  EXPECT_EQ(near.reasoning, tricky);
}

}  // namespace
}  // namespace tessera::server
