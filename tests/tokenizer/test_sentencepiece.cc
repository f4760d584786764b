// SentencePiece .model files (mistral-common's v1/v2/v3/v7 tokenizers).
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "tokenizer/sentencepiece_tokenizer.h"
#include "mistral_models.h"
#include "vocab_test_util.h"

namespace tessera::tokenizer {
namespace {

TEST(SentencePiece, EncodesDecodesAndParsesControlPieces) {
  auto tok = testing::load_mistral_model(3);
  if (!tok) GTEST_SKIP() << "missing " << testing::mistral_model_path(3);
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
    if (!testing::exists(testing::mistral_model_path(v))) continue;
    auto tok = load_tokenizer(testing::mistral_model_path(v));
    ASSERT_TRUE(tok.ok()) << tok.error();
    auto ids = (*tok)->encode("Hello", true);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(ids->front(), 1);
  }
}

}  // namespace
}  // namespace tessera::tokenizer
