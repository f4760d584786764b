// One table of bad requests, through the offline LLM and through AsyncEngine::validate (the
// check the server runs before queueing): both refuse every row, with the same error text.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "engine/async_engine.h"
#include "engine/engine_setup.h"
#include "tessera/llm.h"

namespace tessera {
namespace {

std::string stories_gguf() { return testing::test_data() + "/stories260K/stories260K-f32.gguf"; }

EngineArgs quiet() {
  EngineArgs a;
  a.device = "cpu";
  a.model = stories_gguf();
  a.disable_progress_bar = true;
  a.disable_log_stats = true;
  a.kv_cache_memory = int64_t{16} << 20;
  return a;
}

struct BadRequest {
  const char* name;
  std::vector<int32_t> prompt;
  std::function<void(SamplingParams&)> set;
  const char* says;  // a fact the error must name
};

TEST(RequestValidation, OfflineAndServerRefuseWithTheSameText) {
  auto llm = LLM::create(quiet());
  ASSERT_TRUE(llm.ok()) << llm.error();
  auto loaded = load_engine(quiet());
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  AsyncEngine server(std::move(loaded->core), loaded->tokenizer.get());
  const int32_t vocab = static_cast<int32_t>(server.vocab_size());  // 512 for stories260K
  const std::vector<int32_t> ok_prompt = {1, 403, 407};
  const std::vector<BadRequest> table = {
      {"prompt id out of vocabulary", {1, vocab}, [](SamplingParams&) {}, "prompt token id 512"},
      {"negative prompt id", {1, -3}, [](SamplingParams&) {}, "prompt token id -3"},
      {"empty prompt", {}, [](SamplingParams&) {}, "at least one token"},
      {"prompt of the whole context", std::vector<int32_t>(512, 5), [](SamplingParams&) {}, "maximum context length"},
      {"allowed_token_ids out of vocabulary", ok_prompt,
       [vocab](SamplingParams& p) { p.allowed_token_ids = {3, vocab + 7}; }, "allowed_token_ids token id 519"},
      {"bad word id out of vocabulary", ok_prompt, [vocab](SamplingParams& p) { p.bad_words_token_ids = {{vocab}}; },
       "bad_words token id 512"},
      {"logit_bias key out of vocabulary", ok_prompt, [vocab](SamplingParams& p) { p.logit_bias[vocab] = 1.0f; },
       "logit_bias token id 512"},
      {"n beyond its bound", ok_prompt, [](SamplingParams& p) { p.n = 1000; }, "n must be in [1, 128]"},
      {"n with greedy sampling", ok_prompt,
       [](SamplingParams& p) {
         p.n = 3;
         p.temperature = 0.0f;
       },
       "n must be 1 when using greedy sampling, got 3"},
      {"max_tokens beyond its bound", ok_prompt, [](SamplingParams& p) { p.max_tokens = int64_t{1} << 40; },
       "max_tokens is too large"},
      {"frequency_penalty out of range", ok_prompt, [](SamplingParams& p) { p.frequency_penalty = 2.5f; },
       "frequency_penalty"},
      {"negative repetition_penalty", ok_prompt, [](SamplingParams& p) { p.repetition_penalty = -1.0f; },
       "repetition_penalty"},
      {"negative max_tokens", ok_prompt, [](SamplingParams& p) { p.max_tokens = -1; }, "max_tokens"},
      {"presence_penalty out of range", ok_prompt, [](SamplingParams& p) { p.presence_penalty = -3.0f; },
       "presence_penalty"},
      {"top_p of zero", ok_prompt, [](SamplingParams& p) { p.top_p = 0.0f; }, "top_p"},
      {"logprobs beyond the vocabulary", ok_prompt, [vocab](SamplingParams& p) { p.logprobs = vocab + 1; },
       "at most the vocabulary's size, 512"},
      {"prompt_logprobs beyond the vocabulary", ok_prompt,
       [vocab](SamplingParams& p) { p.prompt_logprobs = vocab + 1; }, "at most the vocabulary's size, 512"},
      {"negative logprobs", ok_prompt, [](SamplingParams& p) { p.logprobs = -1; }, "logprobs must be at least 0"},
  };
  for (const BadRequest& row : table) {
    SamplingParams p;
    p.max_tokens = 4;
    row.set(p);
    const Status online = server.validate(row.prompt, p);
    const auto offline = (*llm)->generate({PromptInput(row.prompt)}, p);
    ASSERT_EQ(offline.size(), 1u);
    EXPECT_FALSE(online.ok()) << row.name << ": the server's check accepted it";
    EXPECT_FALSE(offline[0].error.empty()) << row.name << ": the offline LLM accepted it";
    EXPECT_EQ(offline[0].error, online.message()) << row.name;
    EXPECT_NE(online.message().find(row.says), std::string::npos) << row.name << ": " << online.message();
  }
}

}  // namespace
}  // namespace tessera
