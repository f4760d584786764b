// One KV-offload scenario for both engines (engine_tests on the CPU, cuda_tests on the
// device): a prefix evicted to host memory and loaded back gives exactly what the same
// prefix found on the device gives (same step shapes: a four-block prefix hit, then the last
// prompt token). Nine device blocks of 16 tokens: B's eight evict four of A's five cached
// blocks, so A comes back with one device hit and three host hits.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "tessera/llm.h"

namespace tessera::testing {

// base: a tiny-llama3 engine with prefix caching; block_bytes: one KV block of it (all
// layers, K and V) in the engine's KV dtype.
inline void expect_offloaded_prefix_matches_device_hit(EngineArgs base, int64_t block_bytes) {
  std::vector<int32_t> a, b;
  for (int k = 0; k < 70; ++k) a.push_back(1 + (k * 37) % 300);
  for (int k = 0; k < 110; ++k) b.push_back(301 + (k * 11) % 200);
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 20;
  p.logprobs = 2;
  p.ignore_eos = true;
  SamplingParams pb = p;
  pb.max_tokens = 17;
  base.max_model_len = 128;
  auto ref = LLM::create(base);
  ASSERT_TRUE(ref.ok()) << ref.error();
  (*ref)->generate({PromptInput(a)}, p);
  const std::vector<RequestOutput> want = (*ref)->generate({PromptInput(a)}, p);
  ASSERT_EQ((*ref)->stats().prefix_cache_hits, 64);

  EngineArgs small = base;
  small.kv_cache_memory = 9 * block_bytes;
  small.kv_offloading_size = static_cast<double>(64 * block_bytes) / static_cast<double>(int64_t{1} << 30);
  auto llm = LLM::create(small);
  ASSERT_TRUE(llm.ok()) << llm.error();
  (*llm)->generate({PromptInput(a)}, p);
  (*llm)->generate({PromptInput(b)}, pb);
  const std::vector<RequestOutput> got = (*llm)->generate({PromptInput(a)}, p);
  const LLM::Stats st = (*llm)->stats();
  EXPECT_EQ(st.kv_offload_loads, 3);
  EXPECT_GE(st.kv_offload_stores, 4);
  EXPECT_EQ(st.prefix_cache_hits, 64);
  const CompletionOutput& w = want[0].outputs.at(0);
  const CompletionOutput& g = got[0].outputs.at(0);
  EXPECT_EQ(g.token_ids, w.token_ids);
  ASSERT_EQ(g.logprobs.size(), w.logprobs.size());
  for (size_t i = 0; i < w.logprobs.size(); ++i) EXPECT_EQ(g.logprobs[i], w.logprobs[i]) << "position " << i;
}

}  // namespace tessera::testing
