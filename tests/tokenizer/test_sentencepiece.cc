// SentencePiece .model files (mistral-common's v1/v2/v3/v7 tokenizers) and the Mistral
// chat encoding against mistral-common's own samples (exact token ids).
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "tokenizer/mistral_chat_encoding.h"
#include "tokenizer/python_json.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "vocab_test_util.h"

namespace tessera::tokenizer {
namespace {

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

TEST(SentencePiece, EncodesDecodesAndParsesControlPieces) {
  auto tok = load_or_skip(3);
  if (!tok) GTEST_SKIP() << "missing " << model_path(3);
  EXPECT_EQ(tok->vocab_size(), 32768u);
  EXPECT_EQ(tok->special_tokens().bos_id, 1);
  EXPECT_EQ(tok->special_tokens().eos_id, 2);
  EXPECT_EQ(tok->special_tokens().bos_token, "<s>");
  EXPECT_TRUE(tok->adds_dummy_prefix());
  EXPECT_TRUE(tok->is_special(3));  // [INST]
  EXPECT_FALSE(tok->is_special(1040));

  auto ids = tok->encode("[INST]Hello world[/INST]", true);
  ASSERT_TRUE(ids.ok());
  ASSERT_GE(ids->size(), 4u);
  EXPECT_EQ((*ids)[0], 1);
  EXPECT_EQ((*ids)[1], 3);
  EXPECT_EQ(ids->back(), 4);
  auto plain = tok->encode_ordinary("[INST]");
  ASSERT_TRUE(plain.ok());
  EXPECT_GT(plain->size(), 1u);  // text, not the control piece

  auto text = tok->decode(*ids, false);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "<s>[INST] Hello world[/INST]");
  text = tok->decode(*ids, true);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "Hello world");

  for (const char* s : {"Führer 🦙 \n\n  x", "你好，世界", "tabs\tand\r\nlines"}) {
    auto e = tok->encode(s, false);
    ASSERT_TRUE(e.ok());
    auto d = tok->decode(*e, false);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(*d, s);
  }
  EXPECT_FALSE(tok->encode("bad \xff utf8", false).ok());
  const std::vector<TokenId> bad = {5, 40000};
  EXPECT_FALSE(tok->decode(bad, false).ok());
}

TEST(SentencePiece, LoadTokenizerFindsEveryVersion) {
  for (int v : {1, 2, 3, 7}) {
    if (!testing::exists(model_path(v))) continue;
    auto tok = load_tokenizer(model_path(v));
    ASSERT_TRUE(tok.ok()) << tok.error();
    auto ids = (*tok)->encode("Hello", true);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(ids->front(), 1);
  }
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
}  // namespace tessera::tokenizer
