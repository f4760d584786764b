// `tessera tokenize` / `tessera detokenize` end to end through the built binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "vocab_test_util.h"

namespace tessera {
namespace {

std::string bin() { return testing::env_or("TESSERA_BIN", ""); }

// Runs `cmd` with `input` on stdin; returns stdout.
std::string run(const std::string& cmd, const std::string& input) {
  char tmpl[] = "/tmp/tessera-cli-XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) return "";
  FILE* f = fdopen(fd, "w");
  std::fwrite(input.data(), 1, input.size(), f);
  std::fclose(f);
  std::string out;
  FILE* p = popen((cmd + " < " + tmpl + " 2>/dev/null").c_str(), "r");
  char buf[4096];
  size_t n = 0;
  while (p && (n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  if (p) pclose(p);
  std::remove(tmpl);
  return out;
}

TEST(TokenizeCli, JsonlRoundTripWithBadLines) {
  const std::string vocab = testing::llamacpp_vocab_dir() + "/ggml-vocab-llama-spm.gguf";
  if (!testing::exists(bin()) || !testing::exists(vocab)) GTEST_SKIP() << "needs TESSERA_BIN and " << vocab;
  const std::string tok = bin() + " tokenize --tokenizer " + vocab + " --jsonl";
  EXPECT_EQ(run(tok, "{\"text\": \"Hello\"}\nnope\n{\"text\": \"\\u00e9\"}\n"),
            "{\"ids\":[15043]}\n{\"error\":\"not a JSON object (or not valid UTF-8)\"}\n{\"ids\":[904]}\n");
  EXPECT_EQ(run(tok + " --add-special-tokens", "{\"text\": \"Hello\"}\n"), "{\"ids\":[1,15043]}\n");
  const std::string detok = bin() + " detokenize --tokenizer " + vocab + " --jsonl";
  const std::string out = run(detok, "{\"ids\": [1, 15043]}\n{\"ids\": [99999]}\n{\"ids\": [1, 15043]}\n");
  EXPECT_EQ(out.substr(0, out.find('\n') + 1), "{\"text\":\"<s> Hello\"}\n");
  EXPECT_NE(out.find("{\"error\":\"token id 99999 at position 0 is out of range"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3);
  EXPECT_EQ(run(detok + " --skip-special-tokens", "{\"ids\": [1, 15043]}\n"), "{\"text\":\"Hello\"}\n");
  // A lone continuation byte decodes to U+FFFD: the output stays valid UTF-8 JSON.
  EXPECT_EQ(run(detok, "{\"ids\": [172]}\n"), "{\"text\":\"\xEF\xBF\xBD\"}\n");
}

}  // namespace
}  // namespace tessera
