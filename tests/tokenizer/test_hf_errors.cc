// Hostile tokenizer.json files and inputs: every problem is a clear error, never a crash.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/pcre_regex.h"

namespace tessera::tokenizer {
namespace {

// A tiny valid byte-level BPE file, to be broken one field at a time.
nlohmann::json good() {
  return nlohmann::json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 5, "content": "<s>", "single_word": false, "lstrip": false,
                      "rstrip": false, "normalized": false, "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "post_processor": null,
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "c": 3, "abc": 4},
              "merges": ["a b", "ab c"]}
  })");
}

std::string error_of(const nlohmann::json& j) {
  auto t = HfTokenizer::from_json(j.dump());
  return t.ok() ? std::string("<loaded>") : t.error();
}

TEST(HfErrors, GoodFileLoads) {
  auto t = HfTokenizer::from_json(good().dump());
  ASSERT_TRUE(t.ok()) << t.error();
  auto ids = (*t)->encode("abc<s>ab", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<TokenId>{4, 5, 2}));
}

TEST(HfErrors, BadJson) {
  for (const char* text : {"", "{", "[]", "{\"model\": }", "{\"a\": 1,}", "{\"a\": \"\\x\"}",
                           "{\"a\": \"\\ud800\"}", "{\"a\": tru}", "{\"a\": 1} x", "nul",
                           "{\"a\": \"\x01\"}", "{\"a\": 01}", "{\"a\": -}", "\xff"}) {
    auto t = HfTokenizer::from_json(text);
    EXPECT_FALSE(t.ok()) << "accepted: " << text;
  }
  EXPECT_NE(HfTokenizer::from_json("{\"a\": [1, 2").error().find("byte"), std::string::npos);
  // Deep nesting is refused, not a stack overflow.
  std::string deep(100000, '[');
  EXPECT_NE(HfTokenizer::from_json(deep).error().find("nesting"), std::string::npos);
}

TEST(HfErrors, WrongTypesAndUnknownComponents) {
  auto j = good();
  j["model"]["type"] = "Unigram";
  EXPECT_NE(error_of(j).find("unsupported model type 'Unigram'"), std::string::npos);
  j = good();
  j["model"]["vocab"] = {{"a", "zero"}};
  EXPECT_NE(error_of(j).find("integer"), std::string::npos);
  j = good();
  j["model"]["vocab"] = nlohmann::json::array();
  EXPECT_NE(error_of(j).find("vocab"), std::string::npos);
  j = good();
  j["model"]["merges"] = {"a b c"};
  EXPECT_NE(error_of(j).find("merges"), std::string::npos);
  j = good();
  j["model"]["merges"] = {"a x"};
  EXPECT_NE(error_of(j).find("missing from the vocab"), std::string::npos);
  j = good();
  j["model"]["merges"] = {"b a"};
  EXPECT_NE(error_of(j).find("not in the vocab"), std::string::npos);
  j = good();
  j["model"]["byte_fallback"] = "yes";
  EXPECT_NE(error_of(j).find("byte_fallback"), std::string::npos);
  j = good();
  j["model"]["vocab"]["z"] = 1 << 30;
  EXPECT_NE(error_of(j).find("too large"), std::string::npos);
  j = good();
  j["normalizer"] = {{"type", "Precompiled"}};
  EXPECT_NE(error_of(j).find("unsupported normalizer type 'Precompiled'"), std::string::npos);
  j = good();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  EXPECT_NE(error_of(j).find("bad regex"), std::string::npos);
  j = good();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Sideways"}};
  EXPECT_NE(error_of(j).find("unknown behavior"), std::string::npos);
  j = good();
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "ab"}};
  EXPECT_NE(error_of(j).find("single character"), std::string::npos);
  j = good();
  j["decoder"] = {{"type", "Nope"}};
  EXPECT_NE(error_of(j).find("unsupported decoder type 'Nope'"), std::string::npos);
  j = good();
  j["decoder"] = 7;
  EXPECT_NE(error_of(j).find("decoder must be a JSON object"), std::string::npos);
  j = good();
  j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", {"[CLS]", "$A"}},
                         {"special_tokens", nlohmann::json::object()}};
  EXPECT_NE(error_of(j).find("missing from special_tokens"), std::string::npos);
  j = good();
  j["added_tokens"] = {{{"id", 9}}};
  EXPECT_NE(error_of(j).find("content"), std::string::npos);
  j = good();
  j["added_tokens"] = "none";
  EXPECT_NE(error_of(j).find("added_tokens"), std::string::npos);
  j = good();
  j["version"] = "2.0";
  EXPECT_NE(error_of(j).find("version"), std::string::npos);
  j = good();
  j["model"]["unk_token"] = "<unk>";  // not in the vocab: only an error once it is needed
  auto t = HfTokenizer::from_json(j.dump());
  ASSERT_TRUE(t.ok()) << t.error();
  auto ids = (*t)->encode("z", false);
  EXPECT_FALSE(ids.ok());
  EXPECT_NE(ids.error().find("unk_token"), std::string::npos);
}

TEST(HfErrors, LoadNamesTheFile) {
  auto missing = HfTokenizer::load("/nonexistent/tokenizer.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent/tokenizer.json"), std::string::npos);
  const std::string path = ::testing::TempDir() + "/bad_tokenizer.json";
  std::ofstream(path) << "{\"model\": {\"type\": \"BPE\", \"vocab\": 3}}";
  auto bad = HfTokenizer::load(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().rfind(path + ": ", 0), 0u) << bad.error();
}

TEST(HfErrors, BadInputs) {
  auto t = HfTokenizer::from_json(good().dump());
  ASSERT_TRUE(t.ok());
  for (const char* bad : {"\xff", "ab\xc3", "\xed\xa0\x80", "\xc0\xaf", "a\xf4\x90\x80\x80"}) {
    auto ids = (*t)->encode(bad, false);
    ASSERT_FALSE(ids.ok()) << "accepted invalid UTF-8";
    EXPECT_NE(ids.error().find("UTF-8"), std::string::npos);
  }
  const std::vector<TokenId> out_of_range{1, 6};
  auto text = (*t)->decode(out_of_range, false);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().find("out of range"), std::string::npos);
  const std::vector<TokenId> negative{-1};
  EXPECT_FALSE((*t)->decode(negative, false).ok());
  EXPECT_FALSE((*t)->id_to_token(-3).has_value());
  EXPECT_FALSE((*t)->id_to_token(1000).has_value());
  EXPECT_FALSE((*t)->is_special(-1));
}

TEST(HfErrors, RegexTranslation) {
  EXPECT_EQ(Regex::translate(R"(\s+(?!\S))"), R"(\p{White_Space}+(?!\P{White_Space}))");
  EXPECT_EQ(Regex::translate(R"(\w[^\w]\h\u00e9)"),
            R"([\p{L}\p{M}\p{N}\p{Pc}][^\p{L}\p{M}\p{N}\p{Pc}][0-9a-fA-F]\x{00e9})");
  EXPECT_EQ(Regex::translate(R"([\]\s][[:alpha:]\w])"),
            R"([\]\p{White_Space}][[:alpha:]\p{L}\p{M}\p{N}\p{Pc}])");
}

}  // namespace
}  // namespace tessera::tokenizer
