// llama.cpp's tokenizer vectors (made with HF tokenizers, add_special_tokens=False) against
// the vocabularies embedded in its ggml-vocab-*.gguf files, and against HF tokenizer.json
// files for the vectors that come without a GGUF.
#include <gtest/gtest.h>

#include <algorithm>

#include "tokenizer/gguf_tokenizer.h"
#include "vocab_test_util.h"

namespace tessera::tokenizer {
namespace {

using testing::exists;
using testing::ids_string;
using testing::llamacpp_vocab_dir;
using testing::read_vocab_cases;

// Encodes every case; returns the number that match and prints the ones that do not.
size_t count_exact(const Tokenizer& tok, const std::vector<testing::VocabCase>& cases, const std::string& name) {
  size_t exact = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    auto ids = tok.encode(cases[i].text, /*add_special_tokens=*/false);
    if (!ids.ok()) {
      ADD_FAILURE() << name << " case " << i << ": " << ids.error();
      continue;
    }
    if (*ids == cases[i].ids) {
      ++exact;
    } else {
      ADD_FAILURE() << name << " case " << i << " text '" << cases[i].text << "'\n  expected " << ids_string(cases[i].ids)
                    << "\n  got      " << ids_string(*ids);
    }
  }
  return exact;
}

class LlamaCppVocab : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaCppVocab, MatchesVectorsExactly) {
  const std::string base = llamacpp_vocab_dir() + "/ggml-vocab-" + GetParam() + ".gguf";
  if (!exists(base)) GTEST_SKIP() << "missing " << base;
  auto tok = load_gguf_tokenizer(base);
  ASSERT_TRUE(tok.ok()) << tok.error();
  const auto cases = read_vocab_cases(base + ".inp", base + ".out");
  ASSERT_EQ(cases.size(), 46u);
  const size_t exact = count_exact(**tok, cases, GetParam());
  std::printf("[ vocab    ] %-16s %zu/%zu exact\n", GetParam().c_str(), exact, cases.size());
  EXPECT_EQ(exact, cases.size());
}

TEST_P(LlamaCppVocab, DecodeInvertsEncode) {
  const std::string base = llamacpp_vocab_dir() + "/ggml-vocab-" + GetParam() + ".gguf";
  if (!exists(base)) GTEST_SKIP() << "missing " << base;
  if (GetParam() == "bert-bge") GTEST_SKIP() << "WordPiece normalization is lossy";
  auto tok = load_gguf_tokenizer(base);
  ASSERT_TRUE(tok.ok()) << tok.error();
  const auto& vocab = static_cast<const GgufTokenizer&>(**tok).vocab();
  for (const auto& c : read_vocab_cases(base + ".inp", base + ".out")) {
    auto ids = (*tok)->encode(c.text, false);
    ASSERT_TRUE(ids.ok());
    auto text = (*tok)->decode(*ids, false);
    ASSERT_TRUE(text.ok()) << text.error();
    // HF sends added tokens through the ByteLevel decoder too, so deepseek-coder's added
    // "ü" decodes to byte 0xFC, i.e. U+FFFD. Only such cases may differ.
    const bool has_added = std::any_of(ids->begin(), ids->end(), [&](TokenId id) {
      return vocab.entries[static_cast<size_t>(id)].attr == TokenAttr::kUserDefined;
    });
    if (!has_added) {
      EXPECT_EQ(*text, c.text);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Files, LlamaCppVocab,
                         ::testing::Values("bert-bge", "deepseek-coder", "deepseek-llm", "falcon", "gpt-2",
                                           "llama-spm", "mpt", "phi-3", "refact", "starcoder"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) if (c == '-') c = '_';
                           return n;
                         });

// Vocabularies shipped without vectors still load and round-trip.
TEST(LlamaCppVocab, OtherFilesLoad) {
  for (const char* name : {"baichuan", "gpt-neox"}) {
    const std::string path = llamacpp_vocab_dir() + "/ggml-vocab-" + name + ".gguf";
    if (!exists(path)) continue;
    auto tok = load_gguf_tokenizer(path);
    ASSERT_TRUE(tok.ok()) << tok.error();
    auto ids = (*tok)->encode("Hello world, this is 🦙.cpp!", false);
    ASSERT_TRUE(ids.ok());
    EXPECT_FALSE(ids->empty());
    auto text = (*tok)->decode(*ids, false);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, "Hello world, this is 🦙.cpp!") << name;
  }
}

// Vectors without a GGUF, checked through the HF tokenizer.json of the same tokenizer.
struct HfPairing {
  const char* vectors;
  const char* tokenizer_json;
};

class LlamaCppVectorsViaHf : public ::testing::TestWithParam<HfPairing> {};

TEST_P(LlamaCppVectorsViaHf, MatchesVectorsExactly) {
  const std::string base = llamacpp_vocab_dir() + "/ggml-vocab-" + GetParam().vectors + ".gguf";
  const std::string json = testing::shared_data() + "/tokenizers/" + GetParam().tokenizer_json;
  if (!exists(json) || !exists(base + ".inp")) GTEST_SKIP() << "missing " << json << " or " << base << ".inp";
  auto tok = load_tokenizer(json);
  if (!tok.ok() && tok.error().find("not yet supported") != std::string::npos) {
    GTEST_SKIP() << "the HF tokenizer.json loader is not wired into load_tokenizer yet: " << tok.error();
  }
  ASSERT_TRUE(tok.ok()) << tok.error();
  const auto cases = read_vocab_cases(base + ".inp", base + ".out");
  ASSERT_EQ(cases.size(), 46u);
  const size_t exact = count_exact(**tok, cases, GetParam().vectors);
  std::printf("[ vocab    ] %-16s %zu/%zu exact (via %s)\n", GetParam().vectors, exact, cases.size(),
              GetParam().tokenizer_json);
  EXPECT_EQ(exact, cases.size());
}

INSTANTIATE_TEST_SUITE_P(Files, LlamaCppVectorsViaHf,
                         ::testing::Values(HfPairing{"llama-bpe", "llama3_1/tokenizer.json"},
                                           HfPairing{"qwen2", "qwen3/tokenizer.json"}),
                         [](const auto& info) {
                           std::string n = info.param.vectors;
                           for (char& c : n) if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace tessera::tokenizer
