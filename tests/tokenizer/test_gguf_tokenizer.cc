// GGUF-embedded vocabularies: hand-built files (hostile ones included) through the reader
// and the tokenizer, and SmolLM2's GGUF against HF transformers' conversion of it.
#include <gtest/gtest.h>

#include <random>

#include <nlohmann/json.hpp>

#include "tokenizer/gguf_tokenizer.h"
#include "unit/test_file_writers.h"
#include "vocab_test_util.h"

namespace tessera::tokenizer {
namespace {

using test::Bytes;
using test::GgufWriter;

// GGUF bytes must outlive the file; keep both together.
struct Parsed {
  Bytes bytes;
  Result<std::unique_ptr<GgufTokenizer>> tok = Status::error("unset");
};

Parsed build(const GgufWriter& w) {
  Parsed p;
  p.bytes = w.build();
  auto file = GgufFile::parse(test::as_span(p.bytes), "vocab.gguf");
  if (!file.ok()) {
    p.tok = file.status();
    return p;
  }
  auto vocab = read_gguf_vocab(**file);
  if (!vocab.ok()) {
    p.tok = vocab.status();
    return p;
  }
  p.tok = GgufTokenizer::create(std::move(vocab.value()), "vocab.gguf");
  return p;
}

void expect_error(const GgufWriter& w, const std::string& needle) {
  Parsed p = build(w);
  ASSERT_FALSE(p.tok.ok()) << "expected an error containing '" << needle << "'";
  EXPECT_NE(p.tok.error().find(needle), std::string::npos) << p.tok.error();
  EXPECT_EQ(p.tok.error().rfind("vocab.gguf", 0), 0u) << "errors name the file: " << p.tok.error();
}

// A tiny SentencePiece-style vocabulary: <unk> <s> </s>, bytes for '\n' and 0xC3 0xA9, pieces.
GgufWriter spm_writer() {
  GgufWriter w;
  w.kv_string("tokenizer.ggml.model", "llama");
  const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "<0x0A>", "<0xC3>", "<0xA9>", "▁", "h", "i",
                                           "▁h", "▁hi", "<|user|>"};
  w.kv_array("tokenizer.ggml.tokens", test::gguf_string_array(tokens));
  w.kv_array("tokenizer.ggml.scores",
             test::gguf_pod_array<float>(test::kGgufF32, {0, 0, 0, 0, 0, 0, -1, -2, -2, -1.5f, -0.5f, 0}));
  w.kv_array("tokenizer.ggml.token_type",
             test::gguf_pod_array<int32_t>(test::kGgufI32, {2, 3, 3, 6, 6, 6, 1, 1, 1, 1, 1, 4}));
  w.kv_u32("tokenizer.ggml.bos_token_id", 1);
  w.kv_u32("tokenizer.ggml.eos_token_id", 2);
  return w;
}

// A tiny byte-level BPE vocabulary: "a", "b", "ab", "Ġ", "Ġab" with merges.
GgufWriter bpe_writer(std::vector<std::string> merges = {"a b", "Ġ ab"}) {
  GgufWriter w;
  w.kv_string("tokenizer.ggml.model", "gpt2");
  w.kv_string("tokenizer.ggml.pre", "gpt-2");
  w.kv_array("tokenizer.ggml.tokens", test::gguf_string_array({"a", "b", "ab", "Ġ", "Ġab", "<|end|>"}));
  w.kv_array("tokenizer.ggml.token_type", test::gguf_pod_array<int32_t>(test::kGgufI32, {1, 1, 1, 1, 1, 3}));
  w.kv_array("tokenizer.ggml.merges", test::gguf_string_array(merges));
  w.kv_u32("tokenizer.ggml.eos_token_id", 5);
  return w;
}

TEST(GgufVocab, TinySpmEncodesAndDecodes) {
  Parsed p = build(spm_writer());
  ASSERT_TRUE(p.tok.ok()) << p.tok.error();
  const Tokenizer& t = **p.tok;
  EXPECT_EQ(t.encode("hi", true).value(), (std::vector<TokenId>{1, 10}));
  // 'é' has no piece: byte fallback; '\n' likewise. <|user|> (user-defined) is matched whole.
  EXPECT_EQ(t.encode("hi\né", false).value(), (std::vector<TokenId>{10, 3, 4, 5}));
  // A space is prefixed at the start and after each special token, as llama.cpp does.
  EXPECT_EQ(t.encode("<s>hi<|user|>", false).value(), (std::vector<TokenId>{1, 10, 11}));
  EXPECT_EQ(t.decode(std::vector<TokenId>{1, 10, 3, 4, 5}, false).value(), "<s> hi\né");
  EXPECT_EQ(t.decode(std::vector<TokenId>{1, 10, 3, 4, 5}, true).value(), "hi\né");
  EXPECT_EQ(t.decode(std::vector<TokenId>{4}, false).value(), "\xEF\xBF\xBD");  // lone byte: U+FFFD
  EXPECT_TRUE(t.is_special(1));
  EXPECT_TRUE(t.is_special(0));
  EXPECT_FALSE(t.is_special(11));
  EXPECT_EQ(t.special_tokens().bos_token, "<s>");
  EXPECT_FALSE(t.encode("\xC3", false).ok());
  EXPECT_FALSE(t.decode(std::vector<TokenId>{12}, false).ok());
}

TEST(GgufVocab, TinyBpeEncodes) {
  Parsed p = build(bpe_writer());
  ASSERT_TRUE(p.tok.ok()) << p.tok.error();
  const Tokenizer& t = **p.tok;
  EXPECT_EQ(t.encode("ab ab", false).value(), (std::vector<TokenId>{2, 4}));
  EXPECT_EQ(t.encode("ab<|end|>", false).value(), (std::vector<TokenId>{2, 5}));
  EXPECT_EQ(t.decode(std::vector<TokenId>{2, 4, 5}, true).value(), "ab ab");
}

TEST(GgufVocab, HostileFilesGiveClearErrors) {
  {
    GgufWriter w;
    w.kv_string("general.name", "x");
    expect_error(w, "tokenizer.ggml.model");
  }
  {
    GgufWriter w = spm_writer();
    w = GgufWriter();
    w.kv_string("tokenizer.ggml.model", "llama");
    w.kv_array("tokenizer.ggml.tokens", test::gguf_pod_array<int32_t>(test::kGgufI32, {1, 2}));
    expect_error(w, "expected an array of strings");
  }
  {
    GgufWriter w;
    w.kv_string("tokenizer.ggml.model", "llama");
    w.kv_array("tokenizer.ggml.tokens", test::gguf_string_array({}));
    expect_error(w, "is empty");
  }
  {
    GgufWriter w;
    w.kv_u32("tokenizer.ggml.model", 7);
    expect_error(w, "expected a string");
  }
  {
    GgufWriter w;
    w.kv_string("tokenizer.ggml.model", "t5-unigram");
    w.kv_array("tokenizer.ggml.tokens", test::gguf_string_array({"a"}));
    expect_error(w, "not supported");
  }
  {
    GgufWriter w = spm_writer();
    w.kv_u32("tokenizer.ggml.unknown_token_id", 99);  // duplicate key: the parser rejects or the id is checked
    Parsed p = build(w);
    EXPECT_FALSE(p.tok.ok());
  }
  {
    GgufWriter w;
    w.kv_string("tokenizer.ggml.model", "llama");
    w.kv_array("tokenizer.ggml.tokens", test::gguf_string_array({"<unk>", "<s>", "</s>"}));
    w.kv_u32("tokenizer.ggml.bos_token_id", 3);
    expect_error(w, "bos_token_id = 3 is outside the vocabulary");
  }
  {
    GgufWriter w;
    w.kv_string("tokenizer.ggml.model", "llama");
    w.kv_array("tokenizer.ggml.tokens", test::gguf_string_array({"<unk>", "<s>", "</s>"}));
    w.kv_array("tokenizer.ggml.scores", test::gguf_pod_array<float>(test::kGgufF32, {0, 0}));
    expect_error(w, "scores has 2 entries for 3 tokens");
  }
  {
    GgufWriter w;
    w.kv_string("tokenizer.ggml.model", "llama");
    w.kv_array("tokenizer.ggml.tokens", test::gguf_string_array({"<unk>", "<s>", "</s>"}));
    w.kv_array("tokenizer.ggml.scores", test::gguf_string_array({"x", "y", "z"}));
    expect_error(w, "expected an array of f32");
  }
  {
    GgufWriter w;
    w.kv_string("tokenizer.ggml.model", "llama");
    w.kv_array("tokenizer.ggml.tokens", test::gguf_string_array({"<unk>", "<s>", "</s>"}));
    w.kv_array("tokenizer.ggml.token_type", test::gguf_pod_array<int32_t>(test::kGgufI32, {2, 3, 42}));
    expect_error(w, "token_type[2] = 42");
  }
  {
    GgufWriter w;
    w.kv_string("tokenizer.ggml.model", "llama");
    w.kv_array("tokenizer.ggml.tokens", test::gguf_string_array({"<unk>", "<s>", "<s>"}));
    expect_error(w, "appears twice");
  }
  {
    GgufWriter w;
    w.kv_string("tokenizer.ggml.model", "llama");
    w.kv_array("tokenizer.ggml.tokens", test::gguf_string_array({"a"}));
    w.kv_bool("tokenizer.ggml.add_bos_token", true);
    expect_error(w, "no BOS token");
  }
  {
    GgufWriter w;
    w.kv_string("tokenizer.ggml.model", "llama");
    w.kv_array("tokenizer.ggml.tokens", test::gguf_string_array({"a", "b", "c"}));
    w.kv_u32("tokenizer.ggml.add_bos_token", 1);
    expect_error(w, "expected a bool");
  }
  expect_error(bpe_writer({"a b", "Ġ zz"}), "merge 1 'Ġ zz' refers to 'zz'");
  expect_error(bpe_writer({"a b", "b a"}), "refers to 'ba'");
  expect_error(bpe_writer({"ab"}), "not two pieces");
  {
    GgufWriter w = bpe_writer();
    w = GgufWriter();
    w.kv_string("tokenizer.ggml.model", "gpt2");
    w.kv_array("tokenizer.ggml.tokens", test::gguf_string_array({"a"}));
    expect_error(w, "no tokenizer.ggml.merges");
  }
  {
    GgufWriter w;
    w.kv_string("tokenizer.ggml.model", "gpt2");
    w.kv_string("tokenizer.ggml.pre", "mystery-regex");
    w.kv_array("tokenizer.ggml.tokens", test::gguf_string_array({"a"}));
    w.kv_array("tokenizer.ggml.merges", test::gguf_string_array({}));
    expect_error(w, "unknown pre-tokenizer type 'mystery-regex'");
  }
}

// Truncations and byte flips of a valid file: errors or a working tokenizer, never a crash.
TEST(GgufVocab, CorruptedFilesNeverCrash) {
  const Bytes good = bpe_writer().build();
  std::mt19937 rng(7);
  for (int i = 0; i < 400; ++i) {
    Bytes b = good;
    if (i % 2 == 0) {
      b.resize(rng() % b.size());
    } else {
      for (int k = 0; k < 3; ++k) b[rng() % b.size()] = static_cast<std::byte>(rng());
    }
    auto file = GgufFile::parse(test::as_span(b), "fuzz.gguf");
    if (!file.ok()) continue;
    auto vocab = read_gguf_vocab(**file);
    if (!vocab.ok()) continue;
    auto tok = GgufTokenizer::create(std::move(vocab.value()), "fuzz.gguf");
    if (!tok.ok()) continue;
    auto ids = (*tok)->encode("ab ab<|end|> b", true);
    if (ids.ok()) (void)(*tok)->decode(*ids, false);
  }
}

TEST(GgufVocab, LlamaSpmSpecialTokens) {
  const std::string path = testing::llamacpp_vocab_dir() + "/ggml-vocab-llama-spm.gguf";
  if (!testing::exists(path)) GTEST_SKIP();
  auto tok = load_tokenizer(path);
  ASSERT_TRUE(tok.ok()) << tok.error();
  EXPECT_EQ((*tok)->encode("Hello", true).value(), (std::vector<TokenId>{1, 15043}));
  EXPECT_EQ((*tok)->encode("<s>Hello</s>", false).value(), (std::vector<TokenId>{1, 15043, 2}));
  EXPECT_EQ((*tok)->decode(std::vector<TokenId>{1, 15043, 2}, true).value(), "Hello");
  EXPECT_EQ((*tok)->special_tokens().eos_token, "</s>");
}

// SmolLM2's GGUF against HF transformers' conversion of the same file, with SmolLM2's
// pre-tokenizer restored (tools/reference/gguf_tokenizer_golden.py).
TEST(GgufVocab, SmolLM2MatchesHfConversion) {
  const std::string model = testing::default_model();
  const std::string golden = testing::test_data() + "/tokenizer/smollm2_gguf_golden.jsonl";
  if (!testing::exists(model)) GTEST_SKIP() << "default model not installed";
  ASSERT_TRUE(testing::exists(golden)) << golden;
  auto tok = load_tokenizer(model);
  ASSERT_TRUE(tok.ok()) << tok.error();
  std::istringstream lines(testing::read_file(golden));
  std::string line;
  size_t n = 0, exact = 0;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);
    const std::string text = j["text"].get<std::string>();
    for (bool special : {false, true}) {
      const auto expected = j[special ? "ids_with_special" : "ids"].get<std::vector<TokenId>>();
      auto ids = (*tok)->encode(text, special);
      ASSERT_TRUE(ids.ok()) << ids.error();
      ++n;
      if (*ids == expected) {
        ++exact;
      } else {
        ADD_FAILURE() << "'" << text << "' special=" << special << "\n  expected " << testing::ids_string(expected)
                      << "\n  got      " << testing::ids_string(*ids);
      }
    }
  }
  std::printf("[ smollm2  ] %zu/%zu exact vs HF\n", exact, n);
  EXPECT_EQ(n, 102u);
  EXPECT_EQ(exact, n);
}

}  // namespace
}  // namespace tessera::tokenizer
