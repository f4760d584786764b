// The incremental detokenizer over every tokenizer available: the concatenated deltas equal
// decode(all ids), no delta holds half a character, and a step costs O(window).
#include <gtest/gtest.h>

#include <random>

#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab_common.h"
#include "vocab_test_util.h"

namespace tessera::tokenizer {
namespace {

std::vector<std::string> tokenizer_paths() {
  const std::string d = testing::llamacpp_vocab_dir();
  const std::string m = testing::shared_data() + "/tokenizer-tests/mistral-common";
  const std::string t = testing::shared_data() + "/tokenizers";
  std::vector<std::string> paths;
  for (const char* n : {"bert-bge", "deepseek-coder", "deepseek-llm", "falcon", "gpt-2", "llama-spm", "mpt", "phi-3",
                        "refact", "starcoder", "baichuan", "gpt-neox"}) {
    paths.push_back(d + "/ggml-vocab-" + n + ".gguf");
  }
  paths.push_back(m + "/tokenizer.model.v1");
  paths.push_back(m + "/mistral_instruct_tokenizer_240323.model.v3");
  paths.push_back(m + "/mistral_instruct_tokenizer_241114.model.v7");
  for (const char* n : {"llama2", "llama3_1", "qwen3", "gemma3", "phi3_mini", "deepseek_v3", "gptoss"}) {
    paths.push_back(t + "/" + n + "/tokenizer.json");
  }
  if (!testing::default_model().empty()) paths.push_back(testing::default_model());
  return paths;
}

// Texts: llama.cpp's vocabulary test inputs, joined, plus some chat-like text.
std::string sample_text() {
  std::string s;
  for (const auto& c : testing::read_vocab_cases(testing::llamacpp_vocab_dir() + "/ggml-vocab-gpt-2.gguf.inp",
                                                 testing::llamacpp_vocab_dir() + "/ggml-vocab-gpt-2.gguf.out")) {
    s += c.text + "\n";
  }
  return s + "<s>[INST] Ünïcödé 中文字符 and emoji 🦙🚀 </s> <|im_start|>user\nhi<|im_end|>";
}

size_t longest_byte_run(const Tokenizer& tok, const std::vector<TokenId>& ids) {
  size_t best = 0, run = 0;
  for (TokenId id : ids) {
    auto piece = tok.id_to_token(id);
    run = piece && parse_byte_piece(*piece) ? run + 1 : 0;
    best = std::max(best, run);
  }
  return best;
}

// Runs ids through the detokenizer; checks each delta and returns their concatenation.
std::string stream(const Tokenizer& tok, const std::vector<TokenId>& ids, bool skip, size_t* max_window) {
  IncrementalDetokenizer detok(tok, skip);
  std::string out;
  for (TokenId id : ids) {
    if (max_window) *max_window = std::max(*max_window, detok.window_size());
    auto delta = detok.step(id);
    EXPECT_TRUE(delta.ok()) << delta.error();
    if (!delta.ok()) return out;
    EXPECT_TRUE(is_valid_utf8(*delta)) << "delta is not valid UTF-8";
    out += *delta;
  }
  auto rest = detok.finish();
  EXPECT_TRUE(rest.ok());
  if (rest.ok()) out += *rest;
  EXPECT_EQ(out, detok.text());
  return out;
}

class Detokenizer : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!testing::exists(GetParam())) GTEST_SKIP() << "missing " << GetParam();
    auto tok = load_tokenizer(GetParam());
    if (!tok.ok() && tok.error().find("not yet supported") != std::string::npos) GTEST_SKIP() << tok.error();
    ASSERT_TRUE(tok.ok()) << tok.error();
    tok_ = std::move(tok.value());
  }
  std::unique_ptr<Tokenizer> tok_;
};

TEST_P(Detokenizer, RealEncodingsStreamToDecode) {
  auto ids = tok_->encode(sample_text(), true);
  ASSERT_TRUE(ids.ok()) << ids.error();
  for (bool skip : {false, true}) {
    size_t max_window = 0;
    auto full = tok_->decode(*ids, skip);
    ASSERT_TRUE(full.ok());
    EXPECT_EQ(stream(*tok_, *ids, skip, &max_window), *full) << "skip_special_tokens=" << skip;
    // Windows stay short on real text: the cost of a step does not grow with the stream,
    // only with the longest byte-fallback run, which is held until it ends.
    EXPECT_LE(max_window, 16u + longest_byte_run(*tok_, *ids)) << "skip=" << skip;
  }
}

TEST_P(Detokenizer, RandomIdsStreamToDecode) {
  std::mt19937 rng(1234);
  const auto n = static_cast<TokenId>(tok_->vocab_size());
  for (int round = 0; round < 8; ++round) {
    std::vector<TokenId> ids;
    std::uniform_int_distribution<TokenId> any(0, n - 1);
    // Half the rounds favour low ids, where byte pieces and special tokens live.
    std::uniform_int_distribution<TokenId> low(0, std::min<TokenId>(n - 1, 600));
    for (int i = 0; i < 300; ++i) ids.push_back(round % 2 ? low(rng) : any(rng));
    for (bool skip : {false, true}) {
      auto full = tok_->decode(ids, skip);
      ASSERT_TRUE(full.ok());
      EXPECT_EQ(stream(*tok_, ids, skip, nullptr), *full) << "round " << round << " skip=" << skip;
    }
  }
}

TEST_P(Detokenizer, PromptContextKeepsLeadingSpace) {
  auto prompt = tok_->encode("Hello there", false);
  auto gen = tok_->encode("Hello there my friend", false);
  ASSERT_TRUE(prompt.ok() && gen.ok());
  if (gen->size() <= prompt->size() || !std::equal(prompt->begin(), prompt->end(), gen->begin())) {
    GTEST_SKIP() << "prompt is not a token prefix here";
  }
  IncrementalDetokenizer detok(*tok_, false, *prompt);
  std::string out;
  for (size_t i = prompt->size(); i < gen->size(); ++i) out += detok.step((*gen)[i]).value();
  out += detok.finish().value();
  EXPECT_EQ(out, " my friend");
}

TEST_P(Detokenizer, RejectsOutOfRangeIds) {
  IncrementalDetokenizer detok(*tok_, false);
  EXPECT_FALSE(detok.step(-1).ok());
  EXPECT_FALSE(detok.step(static_cast<TokenId>(tok_->vocab_size())).ok());
  EXPECT_EQ(detok.num_generated(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, Detokenizer, ::testing::ValuesIn(tokenizer_paths()), [](const auto& info) {
  std::string n = info.param.substr(info.param.find_last_of('/') + 1);
  if (n == "tokenizer.json") {
    const std::string dir = info.param.substr(0, info.param.find_last_of('/'));
    n = dir.substr(dir.find_last_of('/') + 1) + "_json";
  }
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
});

}  // namespace
}  // namespace tessera::tokenizer
