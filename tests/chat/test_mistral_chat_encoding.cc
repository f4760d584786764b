// The Mistral chat encoding against mistral-common's own samples (exact token ids), and
// the Python-compatible JSON it writes tool calls with.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "chat/mistral_chat_encoding.h"
#include "chat/python_json.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/mistral_models.h"
#include "tokenizer/vocab_test_util.h"

namespace tessera::chat {
namespace {

using tokenizer::TokenId;

TEST(PythonJson, DumpsLikePython) {
  auto v = python_json_loads(R"({"b": [1, 2.5, 1e20, 0.0001, 1e-05, 100.0, true, null], "a": "x\"\n\u00e9\u0001"})");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(python_json_dumps(*v),
            "{\"b\": [1, 2.5, 1e+20, 0.0001, 1e-05, 100.0, true, null], \"a\": \"x\\\"\\n\xC3\xA9\\u0001\"}");
  EXPECT_FALSE(python_json_loads("not json").has_value());
  EXPECT_EQ(python_json_dumps(*python_json_loads("22")), "22");
  // Shortest round-trip digits as CPython's repr picks them; a digit search by snprintf gives
  // 17 digits at some powers of two (2^-1017: ...2230444e-307).
  EXPECT_EQ(python_float_repr(std::ldexp(1.0, -1017)), "7.120236347223045e-307");
  EXPECT_EQ(python_float_repr(std::ldexp(1.0, -1000)), "9.332636185032189e-302");
  EXPECT_EQ(python_float_repr(std::ldexp(1.0, 70)), "1.1805916207174113e+21");
}

// Every sample of mistral-common's test data, for every tokenizer version it has ids for.
TEST(MistralChat, SamplesMatchExactly) {
  const std::string samples = testing::mistral_dir() + "/samples";
  if (!testing::exists(samples)) GTEST_SKIP() << "missing " << samples;
  size_t checked = 0, exact = 0;
  for (const auto& dir : std::filesystem::directory_iterator(samples)) {
    const auto request = nlohmann::ordered_json::parse(testing::read_file(dir.path().string() + "/sample.json"));
    for (int v : {1, 2, 3}) {
      const std::string expected_path = dir.path().string() + "/tokens_v" + std::to_string(v) + ".json";
      if (!testing::exists(expected_path)) continue;
      auto tok = testing::load_mistral_model(v);
      ASSERT_NE(tok, nullptr) << testing::mistral_model_path(v);
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
  auto tok = testing::load_mistral_model(3);
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
