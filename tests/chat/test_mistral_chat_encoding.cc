// The Mistral chat encoding against mistral-common's own samples (exact token ids), and
// the Python-compatible JSON it writes tool calls with.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "chat/mistral_chat_encoding.h"
#include "chat/python_json.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/vocab_test_util.h"

namespace tessera::chat {
namespace {

using tokenizer::SentencePieceTokenizer;
using tokenizer::TokenId;

std::string mistral_dir() { return testing::shared_data() + "/tokenizer-tests/mistral-common"; }

std::string model_path(int version) {
  switch (version) {
    case 1: return mistral_dir() + "/tokenizer.model.v1";
    case 2: return mistral_dir() + "/mistral_instruct_tokenizer_240216.model.v2";
    case 3: return mistral_dir() + "/mistral_instruct_tokenizer_240323.model.v3";
    default: return mistral_dir() + "/mistral_instruct_tokenizer_241114.model.v7";
  }
}

std::unique_ptr<SentencePieceTokenizer> load_or_skip(int version) {
  auto t = SentencePieceTokenizer::load(model_path(version));
  if (!t.ok()) return nullptr;
  return std::move(t.value());
}

TEST(PythonJson, DumpsLikePython) {
  auto v = python_json_loads(R"({"b": [1, 2.5, 1e20, 0.0001, 1e-05, 100.0, true, null], "a": "x\"\n\u00e9\u0001"})");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(python_json_dumps(*v),
            "{\"b\": [1, 2.5, 1e+20, 0.0001, 1e-05, 100.0, true, null], \"a\": \"x\\\"\\n\xC3\xA9\\u0001\"}");
  EXPECT_FALSE(python_json_loads("not json").has_value());
  EXPECT_EQ(python_json_dumps(*python_json_loads("22")), "22");
}

// Every sample of mistral-common's test data, for every tokenizer version it has ids for.
TEST(MistralChat, SamplesMatchExactly) {
  const std::string samples = mistral_dir() + "/samples";
  if (!testing::exists(samples)) GTEST_SKIP() << "missing " << samples;
  size_t checked = 0, exact = 0;
  for (const auto& dir : std::filesystem::directory_iterator(samples)) {
    const auto request = nlohmann::ordered_json::parse(testing::read_file(dir.path().string() + "/sample.json"));
    for (int v : {1, 2, 3}) {
      const std::string expected_path = dir.path().string() + "/tokens_v" + std::to_string(v) + ".json";
      if (!testing::exists(expected_path)) continue;
      auto tok = load_or_skip(v);
      ASSERT_NE(tok, nullptr) << model_path(v);
      const auto expected =
          nlohmann::json::parse(testing::read_file(expected_path))["tokens"].get<std::vector<TokenId>>();
      auto ids = mistral_encode_chat(*tok, static_cast<MistralInstructVersion>(v), request);
      ++checked;
      ASSERT_TRUE(ids.ok()) << dir.path() << " v" << v << ": " << ids.error();
      if (*ids == expected) {
        ++exact;
      } else {
        ADD_FAILURE() << dir.path() << " v" << v << "\n  expected " << testing::ids_string(expected)
                      << "\n  got      " << testing::ids_string(*ids);
      }
    }
  }
  std::printf("[ mistral  ] %zu/%zu samples exact\n", exact, checked);
  EXPECT_EQ(checked, 13u);
  EXPECT_EQ(exact, checked);
}

TEST(MistralChat, RejectsMalformedRequests) {
  auto tok = load_or_skip(3);
  if (!tok) GTEST_SKIP();
  const auto v3 = MistralInstructVersion::kV3;
  EXPECT_FALSE(mistral_encode_chat(*tok, v3, nlohmann::ordered_json::parse("{}")).ok());
  EXPECT_FALSE(mistral_encode_chat(*tok, v3, nlohmann::ordered_json::parse(R"({"messages": [{"role": 3}]})")).ok());
  EXPECT_FALSE(
      mistral_encode_chat(*tok, v3, nlohmann::ordered_json::parse(R"({"messages": [{"role": "wizard"}]})")).ok());
  auto r = mistral_encode_chat(
      *tok, v3, nlohmann::ordered_json::parse(R"({"messages": [{"role": "user", "content": "[INST] hi"}]})"));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(std::count(r->begin(), r->end(), 3), 1);  // "[INST]" in user text stays text
}

}  // namespace
}  // namespace tessera::chat
