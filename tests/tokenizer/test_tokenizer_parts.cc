// Small parts of the GGUF/SentencePiece tokenizers: UTF-8 helpers, the special-token
// matcher and the regex splitter.
#include <gtest/gtest.h>

#include "tokenizer/regex_splitter.h"
#include "tokenizer/special_token_matcher.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab_common.h"

namespace tessera::tokenizer {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, LossyMatchesPythonReplace) {
  EXPECT_EQ(utf8_lossy("\xE4\xB8"), kFffd);
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98" "a"), kFffd + "a");
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate
  EXPECT_EQ(utf8_lossy("\xC0\xAF"), kFffd + kFffd);              // overlong
  EXPECT_EQ(utf8_lossy("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_EQ(utf8_lossy("a\x80" "b"), "a" + kFffd + "b");
  EXPECT_EQ(utf8_lossy("héllo 🦙"), "héllo 🦙");
  EXPECT_TRUE(is_valid_utf8("héllo 🦙"));
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));
}

TEST(Utf8, IncompleteTail) {
  EXPECT_EQ(utf8_incomplete_tail("ab"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE2\x82"), 2u);
  EXPECT_EQ(utf8_incomplete_tail("a\xF0"), 1u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE2\x82\xAC"), 0u);  // complete €
  EXPECT_EQ(utf8_incomplete_tail("a\x80"), 0u);          // stray byte: invalid, not pending
  EXPECT_EQ(utf8_incomplete_tail("a\xED\xA0"), 0u);      // can never complete
}

TEST(ByteLevel, TableRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(unicode_to_byte(byte_to_unicode(static_cast<uint8_t>(b))), b);
  }
  EXPECT_EQ(byte_level_encode(" a\n"), "Ġa\xC4\x8A");
  EXPECT_EQ(parse_byte_piece("<0x0A>"), 0x0A);
  EXPECT_EQ(parse_byte_piece("<0xfF>"), 0xFF);
  EXPECT_FALSE(parse_byte_piece("<0xG0>").has_value());
  EXPECT_FALSE(parse_byte_piece("<0x0A").has_value());
}

TEST(SpecialTokenMatcher, LeftmostLongestWithStrip) {
  SpecialTokenMatcher m({{"<a>", 1, false, false}, {"<a><b>", 2, false, false}, {"<b>", 3, true, true}});
  auto f = m.split("x<a><b>y <b> z<a>");
  ASSERT_EQ(f.size(), 6u);
  EXPECT_EQ(f[0].text, "x");
  EXPECT_EQ(f[1].token, 2);
  EXPECT_EQ(f[2].text, "y");  // whitespace around <b> stripped
  EXPECT_EQ(f[3].token, 3);
  EXPECT_EQ(f[4].text, "z");
  EXPECT_EQ(f[5].token, 1);
  EXPECT_TRUE(m.split("").empty());
  EXPECT_EQ(SpecialTokenMatcher().split("plain").size(), 1u);
}

TEST(RegexSplitter, KeepsGapsAndUsesUnicodeWhitespace) {
  EXPECT_EQ(expand_whitespace_classes(R"(\s+[^\s\p{L}]\S)"),
            R"([\t-\r\x{20}\x{85}\p{Z}]+[^\t-\r\x{20}\x{85}\p{Z}\p{L}][^\t-\r\x{20}\x{85}\p{Z}])");
  auto s = RegexSplitter::compile({R"(\p{N})", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))"});
  ASSERT_TRUE(s.ok()) << s.error();
  auto pieces = s->split("Hi 42 it's\xC2\xA0ok  !");
  ASSERT_TRUE(pieces.ok());
  std::vector<std::string> got(pieces->begin(), pieces->end());
  EXPECT_EQ(got, (std::vector<std::string>{"Hi", " ", "4", "2", " it", "'s", "\xC2\xA0", "ok", " ", " !"}));
  EXPECT_FALSE(RegexSplitter::compile({"("}).ok());
  for (const char* pre : {"default", "llama-bpe", "qwen2", "smollm", "gpt-2", "deepseek-llm", "deepseek-coder",
                          "falcon", "mpt", "starcoder", "refact", "command-r", "gpt-4o", "tekken", "chameleon",
                          "deepseek-v3", "bailingmoe", "seed-coder", "poro-chat", "viking"}) {
    auto p = pre_tokenizer_patterns(pre);
    ASSERT_TRUE(p.ok()) << pre;
    EXPECT_TRUE(RegexSplitter::compile(*p).ok()) << pre;
  }
  EXPECT_FALSE(pre_tokenizer_patterns("nope").ok());
}

}  // namespace
}  // namespace tessera::tokenizer
