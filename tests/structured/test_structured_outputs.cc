// Structured outputs over real vocabularies (SmolLM2's byte-level BPE, the default model's
// GGUF; the 512-token SentencePiece vocabulary with byte fallback of the tiny test models):
// every token a grammar's mask allows keeps the output valid, so random walks through
// the masks (a uniform pick among the allowed tokens, as a model of any weights could make)
// end in outputs that parse and satisfy the constraint; what the engine cannot enforce is
// refused by name.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "common/test_paths.h"
#include "structured/json_schema_check.h"
#include "structured/repeat_regex.h"
#include "structured/structured_outputs.h"
#include "tokenizer/tokenizer.h"

namespace tessera {
namespace {

using nlohmann::json;

// The tokenizer's file: "default" (the default model) or a path under tests/data.
class StructuredOutputsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string model =
        GetParam() == "default" ? testing::default_model() : testing::test_data() + "/" + GetParam();
    if (model.empty() || !testing::exists(model)) GTEST_SKIP() << "not installed: " << GetParam();
    auto tok = tokenizer::load_tokenizer(model);
    ASSERT_TRUE(tok.ok()) << tok.error();
    tok_ = std::move(*tok);
    vocab_ = static_cast<int64_t>(tok_->vocab_size());
    eos_ = *tok_->special_tokens().eos_id;
    so_ = std::make_unique<structured::StructuredOutputs>(*tok_, vocab_, std::vector<int32_t>{eos_});
  }

  // A random walk through the grammar's masks until it allows only EOS-ending (and EOS is
  // drawn) or max_tokens; the text decoded.
  std::string walk(const StructuredOutputsParams& p, uint32_t seed, int max_tokens = 400, bool* ended = nullptr) {
    auto g = so_->compile(p);
    EXPECT_TRUE(g.ok()) << g.error();
    if (!g.ok()) return "";
    auto m = so_->matcher(**g);
    std::mt19937 rng(seed);
    std::vector<uint32_t> mask(static_cast<size_t>((vocab_ + 31) / 32));
    std::vector<int32_t> ids;
    for (int i = 0; i < max_tokens; ++i) {
      m->fill_allowed(mask.data(), vocab_);
      std::vector<int32_t> allowed;
      for (int64_t t = 0; t < vocab_; ++t) {
        if ((mask[static_cast<size_t>(t / 32)] >> (t % 32)) & 1u) allowed.push_back(static_cast<int32_t>(t));
      }
      EXPECT_FALSE(allowed.empty());
      if (allowed.empty()) break;
      // Prefer ending once the grammar allows it, so walks stay short.
      const bool can_end = std::find(allowed.begin(), allowed.end(), eos_) != allowed.end();
      const int32_t t = can_end && rng() % 2 ? eos_ : allowed[rng() % allowed.size()];
      EXPECT_TRUE(m->accept(t));
      if (t == eos_) {
        EXPECT_TRUE(m->is_terminated());
        if (ended != nullptr) *ended = true;
        break;
      }
      ids.push_back(t);
    }
    auto text = tok_->decode(ids, true);
    EXPECT_TRUE(text.ok());
    return text.ok() ? *text : "";
  }

  std::unique_ptr<tokenizer::Tokenizer> tok_;
  int64_t vocab_ = 0;
  int32_t eos_ = 0;
  std::unique_ptr<structured::StructuredOutputs> so_;
};

TEST_P(StructuredOutputsTest, JsonSchemaWalksGiveValidObjects) {
  StructuredOutputsParams p;
  p.json = R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 12},
      "age": {"type": "integer", "minimum": 0, "maximum": 150},
      "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
      "kind": {"const": "person"}},
    "required": ["name", "age", "kind"], "additionalProperties": false})";
  // Compact JSON: a uniform walk through free whitespace would rarely reach the end.
  p.disable_any_whitespace = true;
  int ended = 0;
  for (uint32_t seed = 0; seed < 20; ++seed) {
    bool done = false;
    const std::string text = walk(p, seed, 400, &done);
    if (!done) continue;  // a walk that ran out of tokens inside a string
    ++ended;
    const json j = json::parse(text, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << text;
    ASSERT_TRUE(j.is_object()) << text;
    EXPECT_TRUE(j["name"].is_string() && j["name"].get<std::string>().size() <= 12 * 4) << text;
    EXPECT_TRUE(j["age"].is_number_integer() && j["age"] >= 0 && j["age"] <= 150) << text;
    EXPECT_EQ(j["kind"], "person") << text;
    for (const auto& [k, v] : j.items()) EXPECT_TRUE(k == "name" || k == "age" || k == "tags" || k == "kind") << k;
    if (j.contains("tags")) {
      EXPECT_LE(j["tags"].size(), 3u);
      for (const auto& t : j["tags"]) EXPECT_TRUE(t == "a" || t == "b" || t == "c") << text;
    }
  }
  EXPECT_GE(ended, 15);
}

TEST_P(StructuredOutputsTest, JsonObjectRegexChoiceAndGrammar) {
  StructuredOutputsParams obj;
  obj.json_object = true;
  StructuredOutputsParams re;
  re.regex = "[0-9]{3}-[a-z]{2,4}";
  StructuredOutputsParams choice;
  choice.choice = std::vector<std::string>{"yes", "no", "maybe \"so\""};
  StructuredOutputsParams gr;
  gr.grammar = R"g(root ::= "(" num (("+" | "*") num)* ")"
num ::= [1-9] [0-9]?)g";
  const std::regex gr_re(R"re(\([1-9][0-9]?([+*][1-9][0-9]?)*\))re");
  for (uint32_t seed = 0; seed < 10; ++seed) {
    bool done = false;
    const std::string o = walk(obj, seed, 300, &done);
    if (done) {
      // Valid JSON; nlohmann refuses numbers beyond a double's range (8E511), which JSON allows.
      try {
        EXPECT_TRUE(json::parse(o).is_object()) << o;
      } catch (const json::exception& e) {
        EXPECT_NE(std::string(e.what()).find("number overflow"), std::string::npos) << e.what() << "\n" << o;
      }
    }
    done = false;
    const std::string r = walk(re, seed, 50, &done);
    EXPECT_TRUE(done);
    EXPECT_TRUE(std::regex_match(r, std::regex("[0-9]{3}-[a-z]{2,4}"))) << r;
    done = false;
    const std::string c = walk(choice, seed, 50, &done);
    EXPECT_TRUE(done);
    EXPECT_TRUE(c == "yes" || c == "no" || c == "maybe \"so\"") << c;
    done = false;
    const std::string g = walk(gr, seed, 100, &done);
    if (done) {
      EXPECT_TRUE(std::regex_match(g, gr_re)) << g;
    }
  }
}

TEST_P(StructuredOutputsTest, WhatCannotBeEnforcedIsRefusedByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type": "array", "uniqueItems": true})", "'uniqueItems' at /"},
      {R"({"type": "object", "properties": {"a": {"not": {"type": "string"}}}})", "'not' at /properties/a"},
      {R"({"if": {"type": "string"}, "then": {"minLength": 2}})", "'if'"},
      {R"({"type": "number", "multipleOf": 0.5})", "'multipleOf'"},
      {R"({"allOf": [{"type": "object"}, {"required": ["a"]}]})", "'allOf'"},
      {R"({"$ref": "https://example.com/schema.json"})", "'$ref'"},
      {R"({"type": "string", "format": "email", "maxLength": 20})", "minLength/maxLength"},
      {R"({"type": "array", "items": {"type": "array", "contains": {"const": 1}}})", "'contains' at /items"},
      {R"({"type": "integer", "multipleOf": 5, "minimum": 0})", "'multipleOf' at / is not supported (with minimum)"},
      {R"({"type": "object", "properties": {"a": {}}, "required": ["a", "b"]})", "'b' is not in properties"},
      {R"({"components": {"schemas": {"X": {"not": {"type": "null"}}}}, "$ref": "#/components/schemas/X"})",
       "'not' at /components/schemas/X"},
  };
  for (const auto& [schema, named] : cases) {
    StructuredOutputsParams p;
    p.json = schema;
    auto g = so_->compile(p);
    ASSERT_FALSE(g.ok()) << schema;
    EXPECT_NE(g.error().find(named), std::string::npos) << g.error();
    EXPECT_NE(g.error().find("structured_outputs.json"), std::string::npos) << g.error();
  }
  // Not JSON, a bad regex, a grammar that does not parse: errors, not crashes.
  StructuredOutputsParams bad_json;
  bad_json.json = "{not json";
  EXPECT_FALSE(so_->compile(bad_json).ok());
  StructuredOutputsParams bad_regex;
  bad_regex.regex = "([a-z";
  EXPECT_FALSE(so_->compile(bad_regex).ok());
  StructuredOutputsParams bad_grammar;
  bad_grammar.grammar = "root ::= (";
  auto g = so_->compile(bad_grammar);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().find("structured_outputs.grammar"), std::string::npos) << g.error();
  // Formats that are only annotations pass (as JSON Schema's validators treat them).
  StructuredOutputsParams annotated;
  annotated.json = R"({"type": "string", "format": "password"})";
  EXPECT_TRUE(so_->compile(annotated).ok());
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, StructuredOutputsTest,
                         ::testing::Values("default", "models/tiny-llama3/tiny-llama3-f32.gguf"),
                         [](const auto& info) { return info.param == "default" ? "SmolLM2" : "TinySentencePiece"; });

// The schema's property order is the output's (vLLM's), and '.' in regexes and patterns
// stops at line breaks (Python's and JSON Schema's).
TEST_P(StructuredOutputsTest, PropertyOrderAndDotFollowTheirDialects) {
  StructuredOutputsParams p;
  p.json = R"({"type": "object", "properties": {"zeta": {"type": "integer"}, "alpha": {"type": "boolean"}},
               "required": ["zeta", "alpha"], "additionalProperties": false})";
  p.disable_any_whitespace = true;
  StructuredOutputsParams dot;
  dot.regex = "x.{1,30}y";
  for (uint32_t seed = 0; seed < 8; ++seed) {
    bool done = false;
    const std::string t = walk(p, seed, 60, &done);
    if (done) {
      EXPECT_EQ(t.rfind("{\"zeta\"", 0), 0u) << t;
    }
    done = false;
    const std::string d = walk(dot, seed, 60, &done);
    EXPECT_EQ(d.find_first_of("\n\r"), std::string::npos) << d;
  }
}

// Lengths past the engine's own unrolling (128) are rewritten into nested counts: walks
// still end inside the bounds, counted in characters as JSON Schema counts them.
TEST_P(StructuredOutputsTest, LongStringLengthsHoldTheirBounds) {
  StructuredOutputsParams p;
  p.json = R"({"type": "object", "properties": {"s": {"type": "string", "minLength": 150, "maxLength": 300}},
               "required": ["s"], "additionalProperties": false})";
  p.disable_any_whitespace = true;
  int ended = 0;
  for (uint32_t seed = 0; seed < 6; ++seed) {
    bool done = false;
    const std::string text = walk(p, seed, 400, &done);
    if (!done) continue;
    ++ended;
    const json j = json::parse(text, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << text;
    const std::string str = j["s"].get<std::string>();
    // A byte-fallback walk can spell a code point the engine admits but UTF-8 forbids (a
    // surrogate); decoding replaces each of its bytes (a known engine gap, see the corpus test).
    if (str.find("\xEF\xBF\xBD") != std::string::npos) continue;
    const auto chars = std::count_if(str.begin(), str.end(), [](char c) { return (c & 0xC0) != 0x80; });
    EXPECT_GE(chars, 150) << text;
    EXPECT_LE(chars, 300) << text;
  }
  EXPECT_GE(ended, 2);
}

// The rewritten repetition matches exactly the counts it stands for, and hands the engine no
// count above its unrolling limit.
TEST(StructuredRepeatRegex, MatchesExactlyItsCounts) {
  const std::vector<std::pair<int64_t, int64_t>> bounds = {{0, 129}, {0, 300}, {129, -1}, {300, -1},
                                                           {130, 400}, {200, 200}, {5, 700}, {256, 257}};
  const std::regex count_re(R"(\{(\d+)(,(\d+))?\})");
  for (const auto& [lo, hi] : bounds) {
    const std::string re = structured::unrolled_repeat("a", lo, hi);
    for (auto it = std::sregex_iterator(re.begin(), re.end(), count_re); it != std::sregex_iterator(); ++it) {
      EXPECT_LE(std::stoll((*it)[1]), structured::kEngineUnrollLimit) << re;
      if ((*it)[3].matched) {
        EXPECT_LE(std::stoll((*it)[3]), structured::kEngineUnrollLimit) << re;
      }
    }
    const std::regex compiled(re);
    const int64_t top = (hi < 0 ? lo + 300 : hi) + 3;
    for (int64_t n = 0; n <= top; ++n) {
      const bool want = n >= lo && (hi < 0 || n <= hi);
      ASSERT_EQ(std::regex_match(std::string(static_cast<size_t>(n), 'a'), compiled), want)
          << "lo " << lo << " hi " << hi << " n " << n << ": " << re;
    }
  }
}

TEST(StructuredRegexDialect, DotOutsideClassesExcludesLineBreaks) {
  EXPECT_EQ(structured::dot_excludes_line_breaks(R"(a.b[.]\.c[^].]d.)"), R"(a[^\n\r]b[.]\.c[^].]d[^\n\r])");
  EXPECT_EQ(structured::dot_excludes_line_breaks(R"([]a.].)"), R"([]a.][^\n\r])");
}

TEST(StructuredChoiceGrammar, QuotesEachChoiceAsALiteral) {
  EXPECT_EQ(structured::choice_grammar({"a", "b\"c", "d\\e\n"}), R"(root ::= "a" | "b\"c" | "d\\e\n")");
}

}  // namespace
}  // namespace tessera
