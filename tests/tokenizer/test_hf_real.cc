// The real tokenizer.json files in shared/data/tokenizers: loading, special tokens from
// tokenizer_config.json, vocabulary queries and a few fixed encodings (ids from HF
// `tokenizers` 0.23). The broad comparison is tools/reference/tokenizer_diff.py.
#include <gtest/gtest.h>

#include "hf_test_util.h"
#include "tokenizer/hf_tokenizer.h"

namespace tessera::tokenizer {
namespace {

using testing::hf_tokenizer_dir;

std::unique_ptr<HfTokenizer> load_or_skip(const std::string& name) {
  auto t = HfTokenizer::load(hf_tokenizer_dir(name));
  EXPECT_TRUE(t.ok()) << t.error();
  return t.ok() ? std::move(*t) : nullptr;
}

TEST(HfReal, Llama3) {
  if (!tessera::testing::exists(hf_tokenizer_dir("llama3_1"))) GTEST_SKIP();
  auto tok = load_or_skip("llama3_1");
  ASSERT_NE(tok, nullptr);
  EXPECT_TRUE(tok->raw_byte_mode());
  EXPECT_EQ(tok->vocab_size(), 128256u);
  auto ids = tok->encode("Hello world, this is a test!", true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<TokenId>{128000, 9906, 1917, 11, 420, 374, 264, 1296, 0}));
  const SpecialTokens& st = tok->special_tokens();
  EXPECT_EQ(st.bos_id, 128000);
  EXPECT_EQ(st.bos_token, "<|begin_of_text|>");
  EXPECT_EQ(st.eos_id, 128009);  // <|eot_id|> from tokenizer_config.json
  EXPECT_TRUE(tok->is_special(128000));
  EXPECT_FALSE(tok->is_special(9906));
  EXPECT_EQ(tok->id_to_token(9906), "Hello");
  EXPECT_EQ(tok->token_to_id("\xC4\xA0world"), 1917);  // "Ġworld"
  auto text = tok->decode(*ids, false);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "<|begin_of_text|>Hello world, this is a test!");
  text = tok->decode(*ids, true);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "Hello world, this is a test!");
}

TEST(HfReal, Llama2LikeByteFallbackAndTemplate) {
  if (!tessera::testing::exists(hf_tokenizer_dir("llama2"))) GTEST_SKIP();
  auto tok = load_or_skip("llama2");
  ASSERT_NE(tok, nullptr);
  EXPECT_FALSE(tok->raw_byte_mode());
  auto ids = tok->encode("Hello world", true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<TokenId>{1, 22557, 1526}));
  EXPECT_EQ(tok->special_tokens().unk_id, 0);
  EXPECT_EQ(tok->special_tokens().eos_id, 2);
  // A character outside the vocab falls back to <0xXX> byte tokens, and decodes back.
  auto emoji = tok->encode("\xF0\x9F\xAB\xA0", false);
  ASSERT_TRUE(emoji.ok());
  ASSERT_FALSE(emoji->empty());
  EXPECT_EQ(tok->id_to_token(emoji->back()).value_or("").substr(0, 3), "<0x");
  auto back = tok->decode(*emoji, false);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "\xF0\x9F\xAB\xA0");
}

TEST(HfReal, AllLoadFast) {
  for (const char* name : {"llama2", "llama3_1", "qwen3", "deepseek_v3", "gemma3", "gptoss",
                           "phi3_mini"}) {
    if (!tessera::testing::exists(hf_tokenizer_dir(name))) continue;
    SCOPED_TRACE(name);
    auto tok = load_or_skip(name);
    ASSERT_NE(tok, nullptr);
    auto ids = tok->encode("", true);
    ASSERT_TRUE(ids.ok());
    auto text = tok->decode(*ids, true);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, "");
  }
}

}  // namespace
}  // namespace tessera::tokenizer
