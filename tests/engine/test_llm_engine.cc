// The engine end to end on real models through the offline API: batch invariance (a prompt
// gives the same greedy output alone and among 64), prefix caching on/off equivalence,
// seeded sampling independent of the batch, n > 1 sharing prompt blocks, bad requests
// failing alone, preemption under a small KV cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>

#include "common/kv_offload_scenario.h"
#include "common/test_paths.h"
#include "tessera/llm.h"
#include "tokenizer/gguf_tokenizer.h"

namespace tessera {
namespace {

std::string stories_gguf() { return testing::test_data() + "/stories260K/stories260K-f32.gguf"; }

std::vector<PromptInput> random_prompts(int count, int vocab, int min_len, int max_len, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<PromptInput> prompts;
  for (int i = 0; i < count; ++i) {
    const int len = min_len + static_cast<int>(rng() % static_cast<uint32_t>(max_len - min_len + 1));
    std::vector<int32_t> ids;
    for (int k = 0; k < len; ++k) ids.push_back(3 + static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab - 3)));
    prompts.emplace_back(std::move(ids));
  }
  return prompts;
}

EngineArgs quiet(const std::string& model) {
  EngineArgs a;
  a.device = "cpu";  // the CPU engine's behaviour; the CUDA engine has its own tests
  a.model = model;
  a.disable_progress_bar = true;
  a.disable_log_stats = true;
  a.kv_cache_memory = int64_t{256} << 20;
  return a;
}

// vLLM's check_logprobs_close: equal tokens, or at the first difference each side's token
// is in the other's top-5 (and comparison stops); logprobs of equal tokens within tol.
void expect_logprobs_close(const CompletionOutput& a, const CompletionOutput& b, double tol, const std::string& what) {
  ASSERT_EQ(a.logprobs.size(), a.token_ids.size());
  ASSERT_EQ(b.logprobs.size(), b.token_ids.size());
  const size_t n = std::min(a.token_ids.size(), b.token_ids.size());
  for (size_t i = 0; i < n; ++i) {
    auto lp = [](const PositionLogprobs& top, int32_t tok) {
      for (const auto& [id, v] : top) {
        if (id == tok) return static_cast<double>(v);
      }
      return static_cast<double>(NAN);
    };
    if (a.token_ids[i] == b.token_ids[i]) {
      EXPECT_NEAR(lp(a.logprobs[i], a.token_ids[i]), lp(b.logprobs[i], b.token_ids[i]), tol) << what << " position " << i;
      continue;
    }
    auto in_top5 = [](const PositionLogprobs& top, int32_t tok) {
      for (size_t k = 0; k < std::min<size_t>(5, top.size()); ++k) {
        if (top[k].first == tok) return true;
      }
      return false;
    };
    EXPECT_TRUE(in_top5(a.logprobs[i], b.token_ids[i]) && in_top5(b.logprobs[i], a.token_ids[i]))
        << what << " diverges at " << i << ": " << a.token_ids[i] << " vs " << b.token_ids[i];
    return;
  }
  EXPECT_EQ(a.token_ids.size(), b.token_ids.size()) << what;
}

// Greedy decoding of max_tokens tokens, EOS ignored.
SamplingParams greedy(int max_tokens) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

void check_batch_invariance(const std::string& model, int vocab, int max_len, int max_tokens, uint32_t seed) {
  EngineArgs args = quiet(model);
  args.max_model_len = 512;
  auto llm = LLM::create(args);
  ASSERT_TRUE(llm.ok()) << llm.error();
  const auto prompts = random_prompts(64, vocab, 1, max_len, seed);
  SamplingParams p = greedy(max_tokens);
  p.logprobs = 5;
  const auto together = (*llm)->generate(prompts, p);
  ASSERT_EQ(together.size(), prompts.size());
  // Alone: a separate engine without prefix caching, so nothing computed in the batch is reused.
  args.enable_prefix_caching = false;
  auto solo = LLM::create(args);
  ASSERT_TRUE(solo.ok()) << solo.error();
  int identical = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(together[i].error.empty()) << together[i].error;
    const auto alone = (*solo)->generate({prompts[i]}, p);
    ASSERT_EQ(alone.size(), 1u);
    ASSERT_EQ(together[i].outputs.size(), 1u);
    EXPECT_EQ(together[i].prompt_token_ids, prompts[i].token_ids);
    expect_logprobs_close(alone[0].outputs[0], together[i].outputs[0], 0.05, "prompt " + std::to_string(i));
    identical += alone[0].outputs[0].token_ids == together[i].outputs[0].token_ids;
  }
  std::printf("[ %s ] %d/64 prompts identical alone and batched\n", model.c_str(), identical);
  EXPECT_GE(identical, 60);
}

TEST(LlmEngine, BatchInvarianceStories260K) {
  check_batch_invariance(stories_gguf(), 512, 80, 48, 1);
}

TEST(LlmEngine, BatchInvarianceSmolLM2) {
  if (!testing::exists(testing::default_model())) GTEST_SKIP() << "SmolLM2 not installed";
  check_batch_invariance(testing::default_model(), 49152, 40, 12, 2);
}

TEST(LlmEngine, PrefixCachingOnAndOffGiveTheSameOutputs) {
  const auto prompts = [] {
    // Shared 40-token prefixes with different tails.
    auto base = random_prompts(4, 512, 40, 40, 3);
    std::vector<PromptInput> out;
    std::mt19937 rng(4);
    for (int i = 0; i < 24; ++i) {
      auto ids = base[static_cast<size_t>(i) % base.size()].token_ids;
      for (int k = 0; k < 1 + i % 7; ++k) ids.push_back(3 + static_cast<int32_t>(rng() % 500));
      out.emplace_back(std::move(ids));
    }
    return out;
  }();
  SamplingParams p = greedy(24);
  std::vector<std::vector<int32_t>> outs[2];
  int64_t hits[2] = {0, 0};
  for (int on = 0; on < 2; ++on) {
    EngineArgs a = quiet(stories_gguf());
    a.enable_prefix_caching = on == 1;
    auto llm = LLM::create(a);
    ASSERT_TRUE(llm.ok()) << llm.error();
    for (const auto& r : (*llm)->generate(prompts, p)) outs[on].push_back(r.outputs.at(0).token_ids);
    hits[on] = (*llm)->stats().prefix_cache_hits;
  }
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_EQ(hits[0], 0);
  EXPECT_GT(hits[1], 0);
}

TEST(LlmEngine, SeededSamplingDoesNotDependOnTheBatch) {
  auto llm = LLM::create(quiet(stories_gguf()));
  ASSERT_TRUE(llm.ok()) << llm.error();
  const auto prompts = random_prompts(16, 512, 5, 30, 5);
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_p = 0.95f;
  p.max_tokens = 32;
  p.ignore_eos = true;
  std::vector<SamplingParams> params;
  for (size_t i = 0; i < prompts.size(); ++i) {
    params.push_back(p);
    params.back().seed = 1000 + i;
  }
  const auto together = (*llm)->generate(prompts, params);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto alone = (*llm)->generate({prompts[i]}, params[i]);
    EXPECT_EQ(alone[0].outputs[0].token_ids, together[i].outputs[0].token_ids) << "prompt " << i;
  }
  // A different seed gives a different sample (on 32 tokens at temperature 0.9).
  params[0].seed = 77;
  const auto other = (*llm)->generate({prompts[0]}, params[0]);
  EXPECT_NE(other[0].outputs[0].token_ids, together[0].outputs[0].token_ids);
}

TEST(LlmEngine, ParallelSamplingSharesThePromptBlocks) {
  // 64-token prompt = 4 full blocks of 16; 4 completions of 16 tokens.
  const auto prompt = random_prompts(1, 512, 64, 64, 6);
  SamplingParams p;
  p.n = 4;
  p.temperature = 1.0f;
  p.seed = 3;
  p.max_tokens = 16;
  p.ignore_eos = true;
  auto llm = LLM::create(quiet(stories_gguf()));
  ASSERT_TRUE(llm.ok()) << llm.error();
  const auto out = (*llm)->generate(prompt, p);
  ASSERT_EQ(out[0].outputs.size(), 4u);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(out[0].outputs[i].index, i);
    EXPECT_EQ(out[0].outputs[i].token_ids.size(), 16u);
  }
  EXPECT_NE(out[0].outputs[0].token_ids, out[0].outputs[1].token_ids);
  // The first child computes the 4 prompt blocks and caches them; the others hit 3 (the
  // last prompt token is always computed, so each recomputes block 3 in its own block), and
  // every child adds one block for positions 64..78: 4 + 3 x 1 + 4 x 1 = 11 blocks, where
  // 4 unshared completions would take 4 x 5 = 20.
  EXPECT_EQ((*llm)->stats().peak_kv_blocks_used, 11);
  EXPECT_EQ((*llm)->stats().prefix_cache_hits, 3 * 48);  // children 2-4 hit 3 blocks (63 < 64 tokens)
}

TEST(LlmEngine, BadRequestsFailAloneAndOthersRun) {
  EngineArgs a = quiet(stories_gguf());
  a.max_model_len = 128;
  auto llm = LLM::create(a);
  ASSERT_TRUE(llm.ok()) << llm.error();
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 8;
  std::vector<PromptInput> prompts = {std::vector<int32_t>{1, 2, 3}, std::vector<int32_t>{1, 9999},
                                      std::vector<int32_t>(200, 5), std::vector<int32_t>{}, std::vector<int32_t>{1, 4, 5}};
  const auto out = (*llm)->generate(prompts, p);
  EXPECT_TRUE(out[0].error.empty());
  EXPECT_NE(out[1].error.find("prompt token id 9999 is out of vocabulary"), std::string::npos) << out[1].error;
  EXPECT_NE(out[2].error.find("maximum context length is 128"), std::string::npos) << out[2].error;
  EXPECT_FALSE(out[3].error.empty());
  EXPECT_TRUE(out[4].error.empty());
  EXPECT_EQ(out[4].outputs.at(0).token_ids.size(), 8u);
  SamplingParams bad = p;
  bad.top_p = 2;
  EXPECT_FALSE((*llm)->generate({std::vector<int32_t>{1}}, bad)[0].error.empty());
  // Generation stops at max_model_len.
  SamplingParams longp = p;
  longp.max_tokens = 1000;
  longp.ignore_eos = true;
  const auto capped = (*llm)->generate({std::vector<int32_t>(100, 7)}, longp);
  EXPECT_EQ(capped[0].outputs.at(0).token_ids.size(), 28u);
  EXPECT_EQ(capped[0].outputs.at(0).finish_reason, "length");
}

// A small KV cache preempts; the outputs stay those of an engine that never does, whether
// preempted requests recompute or (KV offload) get the blocks they lost to the others'
// growth back from host memory, stored there as they were evicted.
TEST(LlmEngine, SmallKvCachePreemptsAndStillMatches) {
  const auto prompts = random_prompts(12, 512, 20, 60, 8);
  SamplingParams p = greedy(40);
  EngineArgs big = quiet(stories_gguf());
  auto ref = LLM::create(big);
  ASSERT_TRUE(ref.ok());
  const auto expected = (*ref)->generate(prompts, p);
  const int64_t block_bytes = 2 * 5 * 16 * 32 * 4;  // K,V x layers x tokens x kv_dim x fp32
  for (int64_t host_blocks : {0, 200}) {
    EngineArgs small = big;
    small.max_model_len = 128;
    small.kv_cache_memory = 12 * block_bytes;  // room for about two requests at a time
    small.kv_offloading_size = static_cast<double>(host_blocks * block_bytes) / static_cast<double>(int64_t{1} << 30);
    auto llm = LLM::create(small);
    ASSERT_TRUE(llm.ok()) << llm.error();
    const auto got = (*llm)->generate(prompts, p);
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(got[i].outputs.at(0).token_ids, expected[i].outputs.at(0).token_ids) << "host blocks " << host_blocks;
    }
    const LLM::Stats st = (*llm)->stats();
    EXPECT_GT(st.num_preemptions, 0);
    EXPECT_EQ(st.kv_offload_loads > 0, host_blocks > 0);
    EXPECT_EQ(st.kv_offload_stores > 0, host_blocks > 0);
    if (host_blocks > 0) {
      small.enable_prefix_caching = false;
      EXPECT_FALSE(LLM::create(small).ok());  // the host tier keeps prefix-cache blocks
    }
  }
}

// A prefix evicted to host memory and loaded back (tests/common/kv_offload_scenario.h).
TEST(LlmEngine, KvOffloadLoadedPrefixGivesTheDeviceHitsTokens) {
  testing::expect_offloaded_prefix_matches_device_hit(quiet(testing::test_data() + "/models/tiny-llama3"),
                                                      2 * 2 * 16 * 32 * 4);  // K,V x layers x tokens x kv_dim x fp32
}

TEST(LlmEngine, BeamSearchWidthOneIsGreedyAndScoresAreTrueLogprobs) {
  auto llm = LLM::create(quiet(stories_gguf()));
  ASSERT_TRUE(llm.ok()) << llm.error();
  const auto prompts = random_prompts(3, 512, 4, 12, 9);
  SamplingParams greedy;
  greedy.temperature = 0;
  greedy.max_tokens = 10;
  greedy.ignore_eos = true;
  BeamSearchParams bp;
  bp.beam_width = 1;
  bp.max_tokens = 10;
  bp.ignore_eos = true;
  const auto g = (*llm)->generate(prompts, greedy);
  const auto b1 = (*llm)->beam_search(prompts, bp);
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(b1[i].sequences.size(), 1u);
    EXPECT_EQ(b1[i].sequences[0].output_token_ids, g[i].outputs[0].token_ids);
  }
  bp.beam_width = 3;
  const auto b3 = (*llm)->beam_search(prompts, bp);
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(b3[i].sequences.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      const BeamSequence& s = b3[i].sequences[k];
      EXPECT_EQ(s.output_token_ids.size(), 10u);
      if (k > 0) {
        EXPECT_GE(b3[i].sequences[k - 1].cum_logprob / 10, s.cum_logprob / 10 - 1e-9);
      }
      // The score is the sum of the model's logprobs of the chosen tokens: recompute it
      // independently with prompt logprobs over the whole sequence.
      SamplingParams check;
      check.max_tokens = 1;
      check.prompt_logprobs = 1;
      const auto r = (*llm)->generate({s.token_ids}, check);
      ASSERT_EQ(r[0].prompt_logprobs.size(), s.token_ids.size());
      double sum = 0;
      const size_t first_out = s.token_ids.size() - s.output_token_ids.size();
      for (size_t pos = first_out; pos < s.token_ids.size(); ++pos) {
        const auto& top = r[0].prompt_logprobs[pos];
        auto it = std::find_if(top.begin(), top.end(), [&](const auto& e) { return e.first == s.token_ids[pos]; });
        ASSERT_NE(it, top.end());
        sum += it->second;
      }
      EXPECT_NEAR(sum, s.cum_logprob, 1e-3) << "prompt " << i << " beam " << k;
    }
    // On these prompts the widest search finds at least greedy's score.
    EXPECT_GE(b3[i].sequences[0].cum_logprob, b1[i].sequences[0].cum_logprob - 1e-6);
  }
}

TEST(LlmEngine, StopStringsAcrossTokenBoundariesAreCutFromTheText) {
  auto llm = LLM::create(quiet(stories_gguf()));
  ASSERT_TRUE(llm.ok()) << llm.error();
  SamplingParams p = greedy(40);
  const auto full = (*llm)->generate({"Once upon a time"}, p);
  ASSERT_TRUE(full[0].error.empty()) << full[0].error;
  const std::string text = full[0].outputs[0].text;
  ASSERT_GT(text.size(), 30u);
  // A stop string from the middle of one token's text to the middle of a later one's.
  std::vector<int32_t> ids = full[0].outputs[0].token_ids;
  // The streamed text keeps the first token's leading space (decoded after the prompt);
  // decode() of the output alone drops it.
  const size_t lead = text.size() - (*llm)->decode(ids).size();
  const std::string before5 = (*llm)->decode(std::vector<int32_t>(ids.begin(), ids.begin() + 5));
  const std::string before7 = (*llm)->decode(std::vector<int32_t>(ids.begin(), ids.begin() + 7));
  ASSERT_GT(before7.size(), before5.size() + 2);
  const size_t start = lead + before5.size() - 1;  // last character of token 5's text
  const std::string stop = text.substr(start, lead + before7.size() - start - 1);
  ASSERT_EQ(text.find(stop), start) << "pick a stop string that occurs first there";
  p.stop = {stop, "never appears"};
  const auto cut = (*llm)->generate({"Once upon a time"}, p);
  EXPECT_EQ(cut[0].outputs[0].text, text.substr(0, start));
  EXPECT_EQ(cut[0].outputs[0].finish_reason, "stop");
  EXPECT_EQ(cut[0].outputs[0].stop_string, stop);
  EXPECT_LE(cut[0].outputs[0].token_ids.size(), 7u);
  p.include_stop_str_in_output = true;
  const auto kept = (*llm)->generate({"Once upon a time"}, p);
  EXPECT_EQ(kept[0].outputs[0].text, text.substr(0, start + stop.size()));
}

// bad_words: resolved with the model's tokenizer (engine/bad_words.h), each word's sequences
// never appear in the output, and a one-token word acts as logit_bias -100 on its ids.
TEST(LlmEngine, BadWordsNeverAppearAndOneTokenWordsActAsAMask) {
  auto llm = LLM::create(quiet(stories_gguf()));
  ASSERT_TRUE(llm.ok()) << llm.error();
  auto tok = tokenizer::load_gguf_tokenizer(stories_gguf());
  ASSERT_TRUE(tok.ok()) << tok.error();
  SamplingParams p = greedy(40);
  const auto full = (*llm)->generate({"Once upon a time"}, p);
  ASSERT_TRUE(full[0].error.empty()) << full[0].error;
  const std::vector<int32_t>& ids = full[0].outputs[0].token_ids;
  auto contains = [](const std::vector<int32_t>& hay, const std::vector<int32_t>& needle) {
    return std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) != hay.end();
  };
  // The first word of the output that the tokenizer spells with one token (SentencePiece:
  // "▁little" alone and inside a text).
  std::string word;
  std::vector<int32_t> alone;
  for (int32_t id : ids) {
    std::string w = (*llm)->decode({id});
    w.erase(0, w.find_first_not_of(' '));
    if (w.size() < 3 || !std::all_of(w.begin(), w.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); })) {
      continue;
    }
    auto a = (*tok)->encode(w, false);
    ASSERT_TRUE(a.ok());
    if (a->size() == 1 && contains(ids, *a)) {
      word = w;
      alone = *a;
      break;
    }
  }
  ASSERT_FALSE(word.empty()) << "no one-token word in " << full[0].outputs[0].text;
  // vLLM's rule: the spelling after a space counts when it has as many tokens, another first.
  std::vector<std::vector<int32_t>> expected = {alone};
  auto inside = (*tok)->encode(" " + word, false);
  ASSERT_TRUE(inside.ok());
  if (inside->size() == alone.size() && inside->front() != alone.front()) expected.push_back(*inside);

  SamplingParams banned = p;
  banned.bad_words = {"  " + word};  // leading blanks do not matter
  const auto without = (*llm)->generate({"Once upon a time"}, banned);
  ASSERT_TRUE(without[0].error.empty()) << without[0].error;
  for (const auto& seq : expected) EXPECT_FALSE(contains(without[0].outputs[0].token_ids, seq));
  EXPECT_NE(without[0].outputs[0].token_ids, ids);
  SamplingParams as_ids = p;
  as_ids.bad_words_token_ids = expected;
  EXPECT_EQ(without[0].outputs[0].token_ids, (*llm)->generate({"Once upon a time"}, as_ids)[0].outputs[0].token_ids);
  // A one-token sequence masks like logit_bias -100 (greedy never takes it then).
  SamplingParams one = p, biased = p;
  one.bad_words_token_ids = {alone};
  biased.logit_bias = {{alone[0], -100.0f}};
  EXPECT_EQ((*llm)->generate({"Once upon a time"}, one)[0].outputs[0].token_ids,
            (*llm)->generate({"Once upon a time"}, biased)[0].outputs[0].token_ids);

  // A two-token sequence of the greedy output: its second token never follows its first.
  const std::vector<int32_t> pair = {ids[4], ids[5]};
  SamplingParams seq = p;
  seq.bad_words_token_ids = {pair};
  const auto cut = (*llm)->generate({"Once upon a time"}, seq);
  ASSERT_TRUE(cut[0].error.empty()) << cut[0].error;
  EXPECT_FALSE(contains(cut[0].outputs[0].token_ids, pair));
  EXPECT_TRUE(std::equal(ids.begin(), ids.begin() + 5, cut[0].outputs[0].token_ids.begin()));  // same up to there

  SamplingParams blank = p;
  blank.bad_words = {" "};
  EXPECT_FALSE((*llm)->generate({"Once upon a time"}, blank)[0].error.empty());
}

// allowed_token_ids: only those tokens come out, the same run as a bias of -100 on all others.
TEST(LlmEngine, AllowedTokenIdsAreTheOnlyOutputs) {
  auto llm = LLM::create(quiet(stories_gguf()));
  ASSERT_TRUE(llm.ok()) << llm.error();
  SamplingParams p = greedy(24);
  const auto full = (*llm)->generate({"Once upon a time"}, p);
  ASSERT_TRUE(full[0].error.empty()) << full[0].error;
  const std::vector<int32_t>& ids = full[0].outputs[0].token_ids;
  // Every other token of the greedy answer, and a few more.
  SamplingParams allowed = p, biased = p;
  for (size_t i = 0; i < ids.size(); i += 2) allowed.allowed_token_ids.push_back(ids[i]);
  allowed.allowed_token_ids.insert(allowed.allowed_token_ids.end(), {300, 301, 302});
  for (int32_t id = 0; id < 512; ++id) {
    if (std::find(allowed.allowed_token_ids.begin(), allowed.allowed_token_ids.end(), id) ==
        allowed.allowed_token_ids.end()) {
      biased.logit_bias[id] = -100.0f;
    }
  }
  const auto only = (*llm)->generate({"Once upon a time"}, allowed);
  ASSERT_TRUE(only[0].error.empty()) << only[0].error;
  for (int32_t id : only[0].outputs[0].token_ids) {
    EXPECT_NE(std::find(allowed.allowed_token_ids.begin(), allowed.allowed_token_ids.end(), id),
              allowed.allowed_token_ids.end())
        << id;
  }
  EXPECT_EQ(only[0].outputs[0].token_ids, (*llm)->generate({"Once upon a time"}, biased)[0].outputs[0].token_ids);
  SamplingParams seeded = allowed;  // sampling too stays inside the set
  seeded.temperature = 1.0f;
  seeded.seed = 7;
  const auto sampled = (*llm)->generate({"Once upon a time"}, seeded);
  ASSERT_TRUE(sampled[0].error.empty()) << sampled[0].error;
  for (int32_t id : sampled[0].outputs[0].token_ids) {
    EXPECT_NE(std::find(allowed.allowed_token_ids.begin(), allowed.allowed_token_ids.end(), id),
              allowed.allowed_token_ids.end());
  }
}

TEST(LlmEngine, ChatRendersTheModelTemplateLikeTransformers) {
  if (!testing::exists(testing::default_model())) GTEST_SKIP() << "SmolLM2 not installed";
  EngineArgs args = quiet(testing::default_model());
  args.max_model_len = 512;
  auto llm = LLM::create(args);
  ASSERT_TRUE(llm.ok()) << llm.error();
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 8;
  const std::vector<nlohmann::ordered_json> convs = {
      nlohmann::ordered_json::parse(R"([{"role": "user", "content": "What is the capital of France?"}])"),
      nlohmann::ordered_json::parse(R"({"not": "a list"})")};
  const auto out = (*llm)->chat(convs, p);
  ASSERT_EQ(out.size(), 2u);
  ASSERT_TRUE(out[0].error.empty()) << out[0].error;
  // transformers 5.24: AutoTokenizer.from_pretrained(gguf).apply_chat_template(messages,
  // add_generation_prompt=True, tokenize=True) on the same GGUF.
  const std::vector<int32_t> hf_ids = {1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519,
                                       28, 7018, 411, 407, 19712, 8182, 2, 198, 1, 4093, 198, 1780, 314,
                                       260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198};
  EXPECT_EQ(out[0].prompt_token_ids, hf_ids);
  EXPECT_EQ(out[0].outputs.at(0).text.substr(0, 30), "The capital of France is Paris");
  EXPECT_FALSE(out[1].error.empty());
}

}  // namespace
}  // namespace tessera
