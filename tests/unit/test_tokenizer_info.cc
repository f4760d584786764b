// GET /tokenizer_info's body from a tokenizer_config.json, as vLLM builds it from transformers'
// loaded tokenizer: no file paths, added tokens as their text, the fast class, the template.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/tokenizer_info.h"

namespace tessera::server {
namespace {

TEST(TokenizerInfo, ReadsTheConfigAsTransformersHoldsIt) {
  const auto path = std::filesystem::temp_directory_path() / ("tokenizer_info_" + std::to_string(getpid()) + ".json");
  std::ofstream(path) << R"({"tokenizer_class": "GPT2Tokenizer", "vocab_file": "/x/vocab.json",
    "merges_file": "/x/merges.txt", "model_max_length": 8192,
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
    "added_tokens_decoder": {"0": {"content": "<|endoftext|>", "special": true}}})";
  auto tmpl = ChatTemplate::from_string("{{ messages[0]['content'] }}", std::nullopt, std::nullopt);
  ASSERT_TRUE(tmpl.ok()) << tmpl.error();
  const auto info = tokenizer_info(path.string(), nullptr, &*tmpl);
  std::filesystem::remove(path);
  EXPECT_FALSE(info.contains("vocab_file"));
  EXPECT_FALSE(info.contains("merges_file"));
  EXPECT_EQ(info["tokenizer_class"], "GPT2TokenizerFast");
  EXPECT_EQ(info["bos_token"], "<s>");
  EXPECT_EQ(info["added_tokens_decoder"]["0"], "<|endoftext|>");
  EXPECT_EQ(info["model_max_length"], 8192);
  EXPECT_EQ(info["chat_template"], "{{ messages[0]['content'] }}");
  // No config (a GGUF's tokenizer): the class transformers builds for it.
  EXPECT_EQ(tokenizer_info("", nullptr, nullptr)["tokenizer_class"], "PreTrainedTokenizerFast");
}

}  // namespace
}  // namespace tessera::server
