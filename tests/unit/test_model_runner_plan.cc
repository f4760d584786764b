// Host-side planning shared by every backend: a step's inputs (plan_step), which logits rows
// a scheduled request needs (plan_logits_rows), which device EngineArgs::device resolves to, and the KV-cache plan
// in fp32 (host) and bf16 (CUDA) blocks; the host KV cache's residency and the release of
// oversized logits buffers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <set>
#include <functional>

#include "config/engine_config.h"
#include "engine/engine_setup.h"
#include "exec/host_sampler.h"
#include "exec/model_runner.h"
#include "exec/step_planner.h"
#include "sample/token_sampler.h"
#include "kv/kv_cache.h"

namespace tessera {
namespace {

Request make_request(int n_prompt, int64_t prompt_logprobs) {
  std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
  for (int i = 0; i < n_prompt; ++i) prompt[i] = 10 + i;
  SamplingParams p;
  p.prompt_logprobs = prompt_logprobs;
  return Request(RequestId{1}, prompt, p);
}

ScheduledRequest scheduled(int32_t start, int32_t n, bool samples) {
  ScheduledRequest s;
  s.id = RequestId{1};
  s.num_computed_tokens = start;
  s.num_scheduled_tokens = n;
  s.samples = samples;
  return s;
}

TEST(PlanLogitsRows, WholePromptWithPromptLogprobs) {
  const Request r = make_request(5, 2);
  std::vector<int32_t> idx = {99};  // rows of earlier requests stay
  LogitsRows lr;
  plan_logits_rows(r, scheduled(0, 5, true), /*base=*/7, &idx, &lr);
  // Positions 0..3 predict prompt tokens 1..4; the last token samples.
  EXPECT_EQ(idx, (std::vector<int32_t>{99, 7, 8, 9, 10, 11}));
  EXPECT_EQ(lr.first_prompt_row, 1);
  EXPECT_EQ(lr.num_prompt_rows, 4);
  EXPECT_EQ(lr.prompt_position, 1);
  EXPECT_EQ(lr.sample_row, 5);
}

TEST(PlanLogitsRows, ChunkedPromptSplitsItsRows) {
  const Request r = make_request(5, 0);
  std::vector<int32_t> idx;
  LogitsRows first;
  plan_logits_rows(r, scheduled(0, 3, false), 0, &idx, &first);
  EXPECT_EQ(idx, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(first.prompt_position, 1);
  EXPECT_EQ(first.sample_row, -1);
  idx.clear();
  LogitsRows second;
  plan_logits_rows(r, scheduled(3, 2, true), 4, &idx, &second);
  // Position 3 predicts prompt token 4; position 4 (the last) samples.
  EXPECT_EQ(idx, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(second.first_prompt_row, 0);
  EXPECT_EQ(second.num_prompt_rows, 1);
  EXPECT_EQ(second.prompt_position, 4);
  EXPECT_EQ(second.sample_row, 1);
}

TEST(PlanLogitsRows, DecodeWithoutPromptLogprobsIsOneRow) {
  Request r = make_request(3, -1);
  r.append_output_token(42);
  std::vector<int32_t> idx;
  LogitsRows lr;
  plan_logits_rows(r, scheduled(3, 1, true), 12, &idx, &lr);
  EXPECT_EQ(idx, (std::vector<int32_t>{12}));
  EXPECT_EQ(lr.num_prompt_rows, 0);
  EXPECT_EQ(lr.sample_row, 0);
}

// Two sequences in one step: a prefill chunk of 5 tokens from position 3 (block size 4, so
// it crosses into its second block) and a decode whose input the step in flight samples.
TEST(PlanStep, WritesEveryArrayAndReportsPendingInputs) {
  Request a = make_request(8, -1);
  Request b = make_request(3, -1);
  b.append_output_token(50);  // b holds 4 tokens; its 5th is pending
  ScheduledRequest sa = scheduled(3, 5, true);
  sa.block_ids = {7, 2};
  ScheduledRequest sb = scheduled(4, 1, true);
  sb.id = RequestId{2};
  sb.block_ids = {9, 4};
  sb.input_pending = true;
  SchedulerOutput out;
  out.requests = {sa, sb};
  const ModelRunner::RequestLookup lookup = [&](RequestId id) { return id == RequestId{1} ? &a : &b; };
  const StepSizes sizes = step_sizes(out);
  ASSERT_EQ(sizes.num_tokens, 6);
  ASSERT_EQ(sizes.num_block_ids, 4);
  std::vector<int32_t> ids(6, -1), pos(6, -1), seq(6, -1), indptr(3, -1), table(4, -1), qsl(3, -1), lens(2, -1);
  std::vector<int64_t> slots(6, -1);
  StepPlan plan;
  plan.pending = {{99, RequestId{99}}};  // cleared by the planner
  plan_step(out, lookup, /*block_size=*/4,
            StepInputArrays{.token_ids = ids.data(), .positions = pos.data(), .slot_mapping = slots.data(),
                            .block_table_indptr = indptr.data(), .block_table_ids = table.data(),
                            .token_seq = seq.data(), .query_start_loc = qsl.data(), .seq_lens = lens.data()},
            &plan);
  EXPECT_EQ(ids, (std::vector<int32_t>{13, 14, 15, 16, 17, 0}));
  EXPECT_EQ(pos, (std::vector<int32_t>{3, 4, 5, 6, 7, 4}));
  EXPECT_EQ(slots, (std::vector<int64_t>{7 * 4 + 3, 2 * 4 + 0, 2 * 4 + 1, 2 * 4 + 2, 2 * 4 + 3, 4 * 4 + 0}));
  EXPECT_EQ(seq, (std::vector<int32_t>{0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(indptr, (std::vector<int32_t>{0, 2, 4}));
  EXPECT_EQ(table, (std::vector<int32_t>{7, 2, 9, 4}));
  EXPECT_EQ(qsl, (std::vector<int32_t>{0, 5, 6}));
  EXPECT_EQ(lens, (std::vector<int32_t>{8, 5}));
  EXPECT_EQ(plan.logits_indices, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(plan.rows[0].sample_row, 0);
  EXPECT_EQ(plan.rows[1].sample_row, 1);
  ASSERT_EQ(plan.pending.size(), 1u);
  EXPECT_EQ(plan.pending[0].first, 5);
  EXPECT_EQ(plan.pending[0].second, RequestId{2});
  EXPECT_FALSE(plan.one_token_per_seq);
  EXPECT_EQ(plan.sizes.num_tokens, 6);
}

TEST(PlanStep, OptionalArraysMayBeNullAndDecodesAreOneTokenPerSequence) {
  Request a = make_request(3, -1);
  a.append_output_token(40);
  ScheduledRequest sa = scheduled(3, 1, true);
  sa.block_ids = {5};
  SchedulerOutput out;
  out.requests = {sa};
  std::vector<int32_t> ids(1), pos(1), indptr(2), table(1);
  std::vector<int64_t> slots(1);
  StepPlan plan;
  plan_step(out, [&](RequestId) { return &a; }, 16,
            StepInputArrays{.token_ids = ids.data(), .positions = pos.data(), .slot_mapping = slots.data(),
                            .block_table_indptr = indptr.data(), .block_table_ids = table.data()},
            &plan);
  EXPECT_EQ(ids[0], 40);
  EXPECT_EQ(slots[0], 5 * 16 + 3);
  EXPECT_TRUE(plan.one_token_per_seq);
  EXPECT_TRUE(plan.pending.empty());
}

// Three rows of a 6-token vocabulary: two prompt rows, then the sampling row.
std::vector<float> three_rows() {
  return {0.0f, 1.0f, 2.0f, 3.0f, 0.5f, -1.0f,  // predicts the prompt's token at position 1
          4.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,   // at position 2
          0.0f, 0.0f, 1.0f, 9.0f, 0.0f, 0.0f};  // the last token's
}

TEST(HostSampler, PromptLogprobsRanksAndTheDrawOfTheAdjustedRow) {
  std::vector<int32_t> prompt = {5, 1, 0};
  SamplingParams p;
  p.prompt_logprobs = 1;
  p.logprobs = 2;
  p.temperature = 0.0f;
  p.logit_bias = {{2, 100.0f}};  // the draw sees the bias; the logprobs do not
  Request r(RequestId{1}, prompt, p);
  r.status = RequestStatus::kRunning;
  LogitsRows lr;
  lr.first_prompt_row = 0;
  lr.num_prompt_rows = 2;
  lr.prompt_position = 1;
  lr.sample_row = 2;
  const std::vector<float> logits = three_rows();
  HostSampler sampler(6, {5});
  RequestStepOutput o;
  sampler.finish(r, lr, logits.data(), &o);
  ASSERT_EQ(o.prompt_logprobs.size(), 2u);
  // Row 0 scores token 1 (logit 1, third best): the top-1 entry is token 3, then token 1;
  // row 1 scores token 0, its best.
  EXPECT_EQ(o.prompt_ranks, (std::vector<int32_t>{3, 1}));
  ASSERT_EQ(o.prompt_logprobs[0].size(), 2u);
  EXPECT_EQ(o.prompt_logprobs[0][0].first, 3);
  EXPECT_EQ(o.prompt_logprobs[0][1].first, 1);
  double z = 0;
  for (int i = 0; i < 6; ++i) z += std::exp(static_cast<double>(logits[i]));
  EXPECT_NEAR(o.prompt_logprobs[0][1].second, 1.0 - std::log(z), 1e-5);
  EXPECT_EQ(o.sampled_token, 2);  // biased past token 3
  ASSERT_TRUE(o.logprobs.has_value());
  EXPECT_EQ((*o.logprobs)[0].first, 3);  // raw logits: token 3 is the best
  EXPECT_EQ(o.logprobs->back().first, 2);
  EXPECT_LT(o.token_logprob, -7.0f);
}

TEST(HostSampler, DrawsTheDeviceSamplersTokenForTheRequestsSeedAndOffset) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 4;
  Request r(RequestId{1}, {1, 2}, p);
  r.status = RequestStatus::kRunning;
  r.sampling_seed = 77;
  const std::vector<float> logits = three_rows();
  HostSampler sampler(6, {5});
  LogitsRows lr;
  lr.sample_row = 0;  // the flattest row
  std::set<int32_t> seen;
  for (uint64_t n = 0; n < 64; ++n) {
    RequestStepOutput o;
    sampler.finish(r, lr, logits.data(), &o);
    EXPECT_EQ(o.sampled_token, sample_token(logits.data(), 6, make_sampling_row(p, 77, n))) << n;
    seen.insert(o.sampled_token);
    r.append_output_token(o.sampled_token);
  }
  EXPECT_GT(seen.size(), 1u);
}

bool cuda_device_usable() {
#ifdef TESSERA_HAVE_CUDA
  return resolve_device("auto").ok() && *resolve_device("auto") == "cuda";
#else
  return false;
#endif
}

TEST(ResolveDevice, CpuAlwaysAndAutoFallsBackToCpu) {
  EXPECT_EQ(*resolve_device("cpu"), "cpu");
  auto automatic = resolve_device("auto");
  ASSERT_TRUE(automatic.ok());
  EXPECT_EQ(*automatic, cuda_device_usable() ? "cuda" : "cpu");
}

TEST(ResolveDevice, CudaWithoutADeviceIsAClearError) {
  if (cuda_device_usable()) GTEST_SKIP() << "a CUDA device is usable here";
  auto r = resolve_device("cuda");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("--device cuda"), std::string::npos) << r.error();
}

TEST(ResolveDevice, UnknownNamesAreRejected) {
  auto r = resolve_device("tpu");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("unknown device 'tpu'"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

ModelConfig llama8b_like() {
  ModelConfig m;
  m.architecture = "llama";
  m.vocab_size = 128256;
  m.hidden_size = 4096;
  m.intermediate_size = 14336;
  m.num_hidden_layers = 32;
  m.num_attention_heads = 32;
  m.num_key_value_heads = 8;
  m.head_dim = 128;
  m.max_position_embeddings = 131072;
  return m;
}

// The plan of a config resolved from args, with the KV element type a backend fixes.
Result<KvCachePlan> plan_for(const EngineArgs& args, KvDtype dtype = KvDtype::kFloat32) {
  auto config = resolve_engine_config(args, llama8b_like());
  if (!config.ok()) return config.status();
  if (!config->cache.kv_dtype) config->cache.kv_dtype = dtype;
  return plan_kv_cache(*config, llama8b_like());
}

TEST(PlanKvCache, Bf16BlocksHoldTwiceTheTokensOfFp32) {
  EngineArgs a;
  a.max_model_len = 4096;
  a.kv_cache_memory = int64_t{1} << 30;
  auto fp32 = plan_for(a);
  ASSERT_TRUE(fp32.ok()) << fp32.error();
  auto bf16 = plan_for(a, KvDtype::kBfloat16);
  ASSERT_TRUE(bf16.ok()) << bf16.error();
  // 32 layers x K,V x 8 heads x 128 dims x 2 bytes = 128 KiB per token, 2 MiB per block.
  EXPECT_EQ(bf16->bytes_per_block, int64_t{2} << 20);
  EXPECT_EQ(bf16->shape.num_blocks - 1, 512);  // + the null block
  EXPECT_EQ(fp32->shape.num_blocks - 1, 256);
  EXPECT_EQ(bf16->shape.dtype_bytes(), 2);
  EXPECT_DOUBLE_EQ(bf16->max_concurrency, 2.0);
}

TEST(ResolveEngineConfig, KvCacheDtypeIsAutoOrANamedType) {
  EngineArgs a;
  auto c = resolve_engine_config(a, llama8b_like());
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_FALSE(c->cache.kv_dtype.has_value());  // auto: the device's set-up decides
  for (const auto& [name, dtype] : {std::pair{"float32", KvDtype::kFloat32}, std::pair{"float16", KvDtype::kFloat16},
                                    std::pair{"bfloat16", KvDtype::kBfloat16}}) {
    a.kv_cache_dtype = name;
    c = resolve_engine_config(a, llama8b_like());
    ASSERT_TRUE(c.ok()) << c.error();
    EXPECT_EQ(c->cache.kv_dtype, dtype) << name;
  }
  a.kv_cache_dtype = "fp8_e4m3";
  EXPECT_NE(resolve_engine_config(a, llama8b_like()).error().find("FP8 KV cache"), std::string::npos);
  a.kv_cache_dtype = "half";
  EXPECT_NE(resolve_engine_config(a, llama8b_like()).error().find("kv_cache_dtype must be"), std::string::npos);
  // A plan needs the resolved type.
  a.kv_cache_dtype = "auto";
  c = resolve_engine_config(a, llama8b_like());
  EXPECT_FALSE(plan_kv_cache(*c, llama8b_like()).ok());
}

TEST(ResolveEngineConfig, CpuOffloadGbIsBytesOfWeights) {
  EngineArgs a;
  a.cpu_offload_gb = 1.5;
  auto c = resolve_engine_config(a, llama8b_like());
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->device.cpu_offload_bytes, int64_t{3} << 29);
  a.cpu_offload_gb = -1;
  EXPECT_NE(resolve_engine_config(a, llama8b_like()).error().find("cpu_offload_gb must be"), std::string::npos);
}

TEST(PlanKvCache, Float16HalvesTheHostCachesBytes) {
  EngineArgs a;
  a.max_model_len = 4096;
  a.max_num_seqs = 1;
  auto fp32 = plan_for(a);
  auto fp16 = plan_for(a, KvDtype::kFloat16);
  ASSERT_TRUE(fp32.ok() && fp16.ok());
  EXPECT_EQ(fp16->bytes_per_block * 2, fp32->bytes_per_block);
  EXPECT_EQ(fp16->shape.num_blocks, fp32->shape.num_blocks);  // the default: what one sequence uses
  EXPECT_NE(fp16->describe(4096).find("float16"), std::string::npos) << fp16->describe(4096);
}

TEST(PlanKvCache, TooLittleMemoryForOneRequestNamesTheFix) {
  EngineArgs a;
  a.max_model_len = 8192;
  a.kv_cache_memory = int64_t{512} << 20;  // 4096 tokens of the 8B shape
  auto plan = plan_for(a, KvDtype::kBfloat16);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().find("fewer than max_model_len 8192"), std::string::npos) << plan.error();
}

TEST(ResolveEngineConfig, NoChunkedPrefillNeedsABudgetOfMaxModelLen) {
  EngineArgs a;
  a.max_model_len = 8192;
  a.enable_chunked_prefill = false;
  // The default budget follows: a prompt of max_model_len - 1 tokens fits one step.
  auto c = resolve_engine_config(a, llama8b_like());
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->scheduler.max_num_batched_tokens, 8192);
  // A budget set below max_model_len would admit prompts that can never be scheduled.
  a.max_num_batched_tokens = 2048;
  c = resolve_engine_config(a, llama8b_like());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("max_num_batched_tokens (2048) is smaller than max_model_len (8192)"), std::string::npos)
      << c.error();
  // With chunked prefill any budget works; the default is 2048.
  a.enable_chunked_prefill = true;
  c = resolve_engine_config(a, llama8b_like());
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->scheduler.max_num_batched_tokens, 2048);
  a.max_num_batched_tokens = 0;
  EXPECT_EQ(resolve_engine_config(a, llama8b_like())->scheduler.max_num_batched_tokens, 2048);
}

TEST(ResolveEngineConfig, EveryDefaultComesFromEngineArgs) {
  EngineArgs a;
  a.tuning = Tuning{};
  auto c = resolve_engine_config(a, llama8b_like());
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->scheduler.max_model_len, 131072);  // the model's maximum
  EXPECT_EQ(c->scheduler.max_num_seqs, a.max_num_seqs);
  EXPECT_EQ(c->scheduler.enable_chunked_prefill, a.enable_chunked_prefill);
  EXPECT_EQ(c->scheduler.async_scheduling, a.async_scheduling);
  EXPECT_EQ(c->cache.block_size, a.block_size);
  EXPECT_EQ(c->cache.enable_prefix_caching, a.enable_prefix_caching);
  EXPECT_EQ(c->cache.kv_cache_memory, 0);  // fixed by the device's memory plan
  EXPECT_EQ(c->device.use_cuda_graphs, !a.enforce_eager);
  EXPECT_DOUBLE_EQ(c->device.gpu_memory_utilization, a.gpu_memory_utilization);
  EXPECT_EQ(c->log_stats, !a.disable_log_stats);
}

TEST(ResolveEngineConfig, KnobsOutOfRangeNameTheKnob) {
  const std::pair<std::function<void(EngineArgs&)>, std::string> cases[] = {
      {[](EngineArgs& a) { a.block_size = 12; }, "block_size must be a power of two"},
      {[](EngineArgs& a) { a.max_num_seqs = 0; }, "max_num_seqs must be at least 1"},
      {[](EngineArgs& a) { a.max_model_len = 1 << 30; }, "exceeds the model's maximum of 131072"},
      {[](EngineArgs& a) { a.kv_cache_memory = -1; }, "kv_cache_memory must not be negative"},
      {[](EngineArgs& a) { a.gpu_memory_utilization = 0.0; }, "gpu_memory_utilization must be in (0, 1]"},
      {[](EngineArgs& a) {
         a.kv_offloading_size = 1.0;
         a.enable_prefix_caching = false;
       },
       "it needs prefix caching"},
  };
  for (const auto& [edit, text] : cases) {
    EngineArgs a;
    edit(a);
    auto c = resolve_engine_config(a, llama8b_like());
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_NE(c.error().find(text), std::string::npos) << c.error();
  }
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

TEST(PlanKvCache, TheDefaultTakesNoMoreThanTheSequencesCanUse) {
  EngineArgs a;  // kv_cache_memory 0: the default
  a.max_model_len = 1024;
  a.max_num_seqs = 2;
  auto plan = plan_for(a);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(plan->shape.num_blocks - 1, 2 * 1024 / 16);  // two sequences of 64 blocks
  a.max_num_seqs = 256;  // would need 32 GiB of fp32 blocks: the 1 GiB default holds
  plan = plan_for(a);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ((plan->shape.num_blocks - 1) * plan->bytes_per_block, kDefaultKvCacheMemory);
  a.kv_cache_memory = int64_t{3} << 30;  // set explicitly: taken as it is
  a.max_num_seqs = 1;
  plan = plan_for(a);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ((plan->shape.num_blocks - 1) * plan->bytes_per_block, int64_t{3} << 30);
}

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

TEST(KvCache, IsResidentFromConstruction) {
  KvCacheShape shape;
  shape.num_layers = 4;
  shape.num_blocks = 512;
  shape.num_kv_heads = 4;
  shape.head_dim = 64;  // 4 x 2 x 512 x 16 x 256 x 4 bytes = 64 MiB
  const int64_t before = resident_bytes();
  KvCache cache(shape);
  const int64_t grown = resident_bytes() - before;
  EXPECT_GE(grown, shape.bytes() * 9 / 10) << "only " << (grown >> 20) << " MiB of " << (shape.bytes() >> 20)
                                           << " MiB resident";
  for (int64_t l = 0; l < shape.num_layers; ++l) {  // and zeroed
    EXPECT_EQ(cache.k_f32(l)[0], 0.0f);
    EXPECT_EQ(cache.v_f32(l)[shape.num_blocks * shape.block_size * shape.kv_dim() - 1], 0.0f);
  }
}

TEST(ReleaseLogits, OnlyStorageAboveTheKeptRowsIsFreed) {
  const int64_t vocab = 1000;
  std::vector<float> rows(8 * vocab);
  release_logits_above(&rows, vocab, 8);
  EXPECT_GE(rows.capacity(), static_cast<size_t>(8 * vocab));  // an ordinary step's rows stay
  rows.resize(1500 * vocab);  // a long prompt's prompt-logprob rows
  release_logits_above(&rows, vocab, 8);
  EXPECT_EQ(rows.capacity(), 0u);
}

}  // namespace
}  // namespace tessera
