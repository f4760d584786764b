// The whole model on the CUDA backend (--device cuda) against Hugging Face transformers'
// greedy goldens (tools/reference/hf_greedy_reference.py): the tiny random models of
// tests/data, SmolLM2-135M (its Q4_1 GGUF dequantized to bf16) when installed, and any
// golden listed in TESSERA_CUDA_GOLDENS (path:path..., e.g. the Llama-3.1-8B-shape random
// model made on the GPU machine by scripts/gpu-check.sh). All prompts of a golden run as one
// batch. Where a token differs from HF's, each side's token must be in the other's top-5,
// after which the case stops (vLLM's check_logprobs_close); the logprobs of agreeing tokens
// are reported, bounded loosely since the engine runs 16-bit activations (bf16 and f16, each
// golden in both).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/hf_golden.h"
#include "common/kv_offload_scenario.h"
#include "common/test_paths.h"
#include "tessera/llm.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::vector<std::string> golden_paths() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(testing::test_data()) / "golden", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("hf-", 0) == 0 && e.path().extension() == ".json") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  if (const char* extra = std::getenv("TESSERA_CUDA_GOLDENS")) {
    std::stringstream ss(extra);
    for (std::string p; std::getline(ss, p, ':');) {
      if (!p.empty()) files.push_back(p);
    }
  }
  return files;
}


bool in_top5(const std::vector<std::pair<double, int32_t>>& sorted, int32_t id) {
  for (size_t k = 0; k < std::min<size_t>(5, sorted.size()); ++k) {
    if (sorted[k].second == id) return true;
  }
  return false;
}

class CudaHfReference : public ::testing::TestWithParam<std::string> {};

// One golden at one compute dtype (EngineArgs::dtype).
void check_against_golden(const nlohmann::json& golden, const std::string& path, const std::string& dtype) {
  SCOPED_TRACE("dtype " + dtype);
  EngineArgs args;
  args.model = path;
  args.device = "cuda";
  args.dtype = dtype;
  args.disable_progress_bar = true;
  args.disable_log_stats = true;
  args.gpu_memory_utilization = 0.5;
  // Both runs below compute the same batches (a prefix hit would change the second's shapes,
  // and bf16 GEMMs of other shapes round differently).
  args.enable_prefix_caching = false;
  auto llm = LLM::create(args);
  ASSERT_TRUE(llm.ok()) << llm.error();

  std::vector<PromptInput> prompts;
  for (const auto& c : golden["cases"]) prompts.emplace_back(c["prompt_token_ids"].get<std::vector<int32_t>>());
  SamplingParams params;
  params.temperature = 0;
  params.ignore_eos = true;
  params.max_tokens = golden["max_tokens"].get<int64_t>();
  params.logprobs = 5;  // sampled, and the logprobs computed, on the device
  const std::vector<RequestOutput> outs = (*llm)->generate(prompts, params);
  SamplingParams host_params = params;
  host_params.logit_bias = {{0, 0.0f}};  // a bias that changes nothing, but the logits rows go to the host
  const std::vector<RequestOutput> host_outs = (*llm)->generate(prompts, host_params);
  ASSERT_EQ(outs.size(), prompts.size());
  // Device logprobs against the host's (fp32 log-softmax with a double sum), where the tokens agree.
  double max_device_host = 0;
  for (size_t ci = 0; ci < prompts.size(); ++ci) {
    const CompletionOutput& d = outs[ci].outputs[0];
    const CompletionOutput& h = host_outs[ci].outputs[0];
    EXPECT_EQ(d.token_ids, h.token_ids) << "device greedy vs host greedy, case " << ci;
    ASSERT_EQ(d.logprobs.size(), d.token_ids.size());
    ASSERT_EQ(h.logprobs.size(), h.token_ids.size());
    for (size_t i = 0; i < std::min(d.token_ids.size(), h.token_ids.size()) && d.token_ids[i] == h.token_ids[i]; ++i) {
      float host_fifth = 0;
      for (size_t k = 0; k < std::min<size_t>(5, h.logprobs[i].size()); ++k) host_fifth = h.logprobs[i][k].second;
      for (const auto& [id, lp] : d.logprobs[i]) {
        auto it = std::find_if(h.logprobs[i].begin(), h.logprobs[i].end(), [&](const auto& e) { return e.first == id; });
        if (it == h.logprobs[i].end()) {  // only a near-tie at the top-5 boundary may differ
          EXPECT_NEAR(lp, host_fifth, 1e-3) << "case " << ci << " position " << i << " token " << id;
          continue;
        }
        max_device_host = std::max(max_device_host, static_cast<double>(std::fabs(lp - it->second)));
      }
    }
  }
  EXPECT_LT(max_device_host, 1e-3) << "device logprobs vs the host's";

  int compared = 0, diverged = 0;
  double max_diff = 0;
  for (size_t ci = 0; ci < prompts.size(); ++ci) {
    const auto& c = golden["cases"][ci];
    const auto ref_ids = c["token_ids"].get<std::vector<int32_t>>();
    const CompletionOutput& o = outs[ci].outputs[0];
    ASSERT_EQ(o.token_ids.size(), ref_ids.size());
    for (size_t i = 0; i < ref_ids.size(); ++i) {
      const int32_t tok = o.token_ids[i];
      if (tok == ref_ids[i]) {
        max_diff = std::max(max_diff, std::fabs(o.logprobs[i][0].second - c["token_logprobs"][i].get<double>()));
        ++compared;
        continue;
      }
      std::vector<std::pair<double, int32_t>> ref_sorted, ours_sorted;
      for (const auto& [id, lp] : c["logprobs"][i].items()) ref_sorted.emplace_back(lp.get<double>(), std::stoi(id));
      std::sort(ref_sorted.rbegin(), ref_sorted.rend());
      for (const auto& [id, lp] : o.logprobs[i]) ours_sorted.emplace_back(lp, id);
      std::sort(ours_sorted.rbegin(), ours_sorted.rend());
      std::string tops = "; HF top-5:";
      for (size_t k = 0; k < std::min<size_t>(5, ref_sorted.size()); ++k) {
        tops += " " + std::to_string(ref_sorted[k].second) + " (" + std::to_string(ref_sorted[k].first) + ")";
      }
      tops += "; ours:";
      for (size_t k = 0; k < std::min<size_t>(5, ours_sorted.size()); ++k) {
        tops += " " + std::to_string(ours_sorted[k].second) + " (" + std::to_string(ours_sorted[k].first) + ")";
      }
      EXPECT_TRUE(in_top5(ref_sorted, tok) && in_top5(ours_sorted, ref_ids[i]))
          << "prompt of " << c["prompt_token_ids"].size() << " tokens, position " << i << ": ours " << tok << ", HF "
          << ref_ids[i] << tops;
      ++diverged;
      break;
    }
  }
  std::printf("[ %s on CUDA, %s ] %d positions compared, %d of %zu cases diverged, max |logprob diff| %.4f "
              "(device vs host logprobs: %.2e)\n",
              golden["model"].get<std::string>().c_str(), dtype.c_str(), compared, diverged, prompts.size(), max_diff, max_device_host);
  EXPECT_GT(compared, 0);
  EXPECT_LT(max_diff, 0.5) << "16-bit activations should stay within 0.5 nats of transformers";
}

// Every golden in bfloat16 and float16 (vLLM's --dtype half): the same kernels, templated on
// the element type, held to the same criterion against transformers.
TEST_P(CudaHfReference, GreedyTokensMatchTransformers) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  std::ifstream in(GetParam());
  const auto golden = nlohmann::json::parse(in);
  const std::string path = testing::golden_model_path(golden["source"]);
  if (!testing::exists(path)) GTEST_SKIP() << "model not available: " << path;
  for (const char* dtype : {"bfloat16", "float16"}) check_against_golden(golden, path, dtype);
}

// The tiny Llama-3 model on the device, quiet, without prefix caching (so that the runs a
// test compares compute the same batches).
EngineArgs tiny_cuda_args() {
  EngineArgs args;
  args.model = testing::test_data() + "/models/tiny-llama3";
  args.device = "cuda";
  args.disable_progress_bar = true;
  args.disable_log_stats = true;
  args.gpu_memory_utilization = 0.3;
  args.enable_prefix_caching = false;
  return args;
}

// Async scheduling (each step queued before the last one's tokens reach the host, those
// tokens fed to it on the device) returns what the synchronous loop does: seeded sampling
// keyed by output index, min_tokens (host rows, which pause the look-ahead), and lengths that
// end requests while a step runs behind. Every request is admitted within the first steps
// and none stops early, so both loops run the same batches: a request that an EOS or stop
// token ends still has a row in the step behind (its result dropped), which changes that
// step's shapes and so the bf16 rounding of everything in it (tokens then part at near-ties).
// Stops in look-ahead steps are checked by engine_tests (AsyncScheduling).
TEST(CudaAsyncScheduling, SameTokensAsTheSynchronousLoop) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  std::vector<PromptInput> prompts;
  std::vector<SamplingParams> params;
  for (int i = 0; i < 24; ++i) {
    std::vector<int32_t> ids;
    for (int k = 0; k < 5 + (i * 13) % 40; ++k) ids.push_back(1 + (i * 31 + k * 7) % 200);
    prompts.emplace_back(ids);
    SamplingParams p;
    p.max_tokens = 8 + (i * 17) % 40;
    p.temperature = i % 3 == 0 ? 0.0f : 0.9f;
    p.top_p = i % 2 == 0 ? 1.0f : 0.9f;
    p.seed = 1000 + i;
    if (i % 5 == 1) p.min_tokens = 6;
    p.ignore_eos = true;
    params.push_back(p);
  }
  std::vector<std::vector<RequestOutput>> runs;
  for (bool async : {false, true}) {
    EngineArgs args = tiny_cuda_args();
    args.max_num_seqs = 32;
    args.max_num_batched_tokens = 64;  // prompts chunked over the first steps, beside decodes
    args.async_scheduling = async;
    auto llm = LLM::create(args);
    ASSERT_TRUE(llm.ok()) << llm.error();
    runs.push_back((*llm)->generate(prompts, params));
  }
  int64_t tokens = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const CompletionOutput& a = runs[0][i].outputs[0];
    const CompletionOutput& b = runs[1][i].outputs[0];
    EXPECT_EQ(b.token_ids, a.token_ids) << "prompt " << i;
    EXPECT_EQ(b.finish_reason, a.finish_reason) << "prompt " << i;
    tokens += static_cast<int64_t>(a.token_ids.size());
  }
  EXPECT_GT(tokens, 300);
}

// Penalties, logit bias and min_tokens applied on the device (apply_logit_adjustments before
// the sampler) give the host path's greedy tokens: logprobs send a row with adjustments to
// the host (they are those of the raw logits). Synchronous steps both ways, so that both
// runs compute the same batches.
TEST(CudaLogitAdjustments, DeviceTokensEqualTheHostPath) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  std::vector<PromptInput> prompts;
  std::vector<SamplingParams> params;
  for (int i = 0; i < 16; ++i) {
    std::vector<int32_t> ids;
    for (int k = 0; k < 6 + (i * 11) % 30; ++k) ids.push_back(1 + (i * 29 + k * 5) % 150);
    prompts.emplace_back(ids);
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = 24 + i;
    p.repetition_penalty = i % 2 == 0 ? 1.3f : 0.8f;
    p.frequency_penalty = (i % 3) * 0.4f;
    p.presence_penalty = i % 4 == 1 ? 0.6f : -0.2f;
    if (i % 5 == 0) p.logit_bias = {{ids[0], 2.0f}, {3, -5.0f}};
    if (i % 3 == 1) p.min_tokens = 10;
    params.push_back(p);
  }
  EngineArgs args = tiny_cuda_args();
  args.async_scheduling = false;
  auto llm = LLM::create(args);
  ASSERT_TRUE(llm.ok()) << llm.error();
  const std::vector<RequestOutput> device = (*llm)->generate(prompts, params);
  std::vector<SamplingParams> host_params = params;
  for (SamplingParams& p : host_params) p.logprobs = 1;
  const std::vector<RequestOutput> host = (*llm)->generate(prompts, host_params);
  int64_t tokens = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(device[i].outputs[0].token_ids, host[i].outputs[0].token_ids) << "prompt " << i;
    tokens += static_cast<int64_t>(device[i].outputs[0].token_ids.size());
  }
  EXPECT_GT(tokens, 300);
}

// KV offload on the device (pinned host memory; stores on a copy stream, loads on the step's
// stream; decode graphs): tests/common/kv_offload_scenario.h.
TEST(CudaKvOffload, LoadedPrefixGivesTheDeviceHitsTokens) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  EngineArgs base = tiny_cuda_args();
  base.enable_prefix_caching = true;
  base.async_scheduling = false;
  testing::expect_offloaded_prefix_matches_device_hit(base, 2 * 2 * 16 * 32 * 2);  // bf16 blocks
}

// The same with async scheduling (the look-ahead step queued behind each one): the stores
// run on the copy stream while the step before still runs, waited for per layer through the
// event set of their own step.
TEST(CudaKvOffload, LoadedPrefixMatchesWithAsyncScheduling) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  EngineArgs base = tiny_cuda_args();
  base.enable_prefix_caching = true;
  base.async_scheduling = true;
  testing::expect_offloaded_prefix_matches_device_hit(base, 2 * 2 * 16 * 32 * 2);  // bf16 blocks
}

INSTANTIATE_TEST_SUITE_P(Goldens, CudaHfReference, ::testing::ValuesIn(golden_paths()), [](const auto& info) {
  std::string n = fs::path(info.param).stem().string();
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
});

// cpu_offload_gb: the last layers' linears in pinned host memory, read by the same kernels
// through unified addressing, give the same tokens and logprobs bit for bit as weights in
// device memory (one layer of tiny-llama3's two, then both), for prefill GEMMs and decode
// GEMVs (graphs included).
TEST(CudaCpuOffload, OffloadedLayersGiveTheSameTokensAndLogprobs) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  std::vector<PromptInput> prompts;
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> ids;
    for (int k = 0; k < 4 + i * 9; ++k) ids.push_back(1 + (i * 37 + k * 11) % 250);
    prompts.emplace_back(ids);
  }
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 24;
  p.logprobs = 3;
  p.ignore_eos = true;
  // One layer's linears are 73,728 bytes: 5e-5 GiB (53,687 bytes) offloads one, 1e-4 both.
  std::vector<std::vector<RequestOutput>> runs;
  for (double gib : {0.0, 5e-5, 1e-4}) {
    EngineArgs args = tiny_cuda_args();
    args.async_scheduling = false;
    args.cpu_offload_gb = gib;
    auto llm = LLM::create(args);
    ASSERT_TRUE(llm.ok()) << llm.error();
    runs.push_back((*llm)->generate(prompts, p));
  }
  for (size_t r = 1; r < runs.size(); ++r) {
    for (size_t i = 0; i < prompts.size(); ++i) {
      const CompletionOutput& a = runs[0][i].outputs[0];
      const CompletionOutput& b = runs[r][i].outputs[0];
      EXPECT_EQ(b.token_ids, a.token_ids) << "run " << r << ", prompt " << i;
      EXPECT_EQ(b.logprobs, a.logprobs) << "run " << r << ", prompt " << i;
      EXPECT_EQ(b.token_ids.size(), 24u);
    }
  }
}

// Structured outputs on the device: a request's grammar mask is filled on the host from the
// tokens so far and applied by the device sampler (on the host for a row that wants logprobs
// of the raw logits); every output that ends keeps
// its grammar (the tiny model's SentencePiece vocabulary spells any byte, so every grammar is
// reachable), in both compute dtypes, beside unconstrained requests in the same batches.
TEST(CudaStructuredOutputs, EveryFinishedOutputKeepsItsGrammar) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  for (const char* dtype : {"bfloat16", "float16"}) {
    SCOPED_TRACE(dtype);
    EngineArgs args = tiny_cuda_args();
    args.model = testing::test_data() + "/models/tiny-llama3/tiny-llama3-f32.gguf";
    args.dtype = dtype;
    auto llm = LLM::create(args);
    ASSERT_TRUE(llm.ok()) << llm.error();
    const std::string pattern = "[a-z]{3,6}-[0-9]{2}";
    std::vector<PromptInput> prompts;
    std::vector<SamplingParams> params;
    for (int i = 0; i < 12; ++i) {
      prompts.emplace_back(std::vector<int32_t>{1, 100 + i, 200 + i});
      SamplingParams p;
      p.temperature = 1.0f;
      p.seed = 40 + i;
      p.max_tokens = 120;
      StructuredOutputsParams so;
      switch (i % 4) {
        case 0: so.regex = pattern; break;
        case 1: so.choice = std::vector<std::string>{"alpha", "beta", "gamma"}; break;
        case 2:
          so.json = R"({"type":"object","properties":{"k":{"type":"integer"},"v":{"enum":["x","y"]}},)"
                    R"("required":["k","v"],"additionalProperties":false})";
          so.disable_any_whitespace = true;
          break;
        default: break;  // unconstrained, in the same batch
      }
      if (i % 4 != 3) p.structured_outputs = so;
      if (i % 8 == 1) p.logprobs = 2;  // raw logprobs: this row's mask is applied on the host
      params.push_back(p);
    }
    const std::vector<RequestOutput> outs = (*llm)->generate(prompts, params);
    ASSERT_EQ(outs.size(), prompts.size());
    int finished = 0;
    for (size_t i = 0; i < outs.size(); ++i) {
      const CompletionOutput& o = outs[i].outputs[0];
      if (i % 4 == 3 || o.finish_reason != "stop") continue;
      ++finished;
      if (i % 4 == 0) EXPECT_TRUE(std::regex_match(o.text, std::regex(pattern))) << o.text;
      if (i % 4 == 1) EXPECT_TRUE(o.text == "alpha" || o.text == "beta" || o.text == "gamma") << o.text;
      if (i % 4 == 2) {
        const auto j = nlohmann::json::parse(o.text, nullptr, false);
        ASSERT_FALSE(j.is_discarded()) << o.text;
        // An integer of any size (JSON's): digits only, which a double may hold.
        EXPECT_TRUE(j.at("k").is_number()) << o.text;
        EXPECT_TRUE(std::regex_search(o.text, std::regex(R"("k":\s*-?[0-9]+\s*[,}])"))) << o.text;
        EXPECT_TRUE(j.at("v") == "x" || j.at("v") == "y") << o.text;
      }
    }
    EXPECT_GE(finished, 6);  // regexes and choices always end within 120 tokens
  }
}

}  // namespace
}  // namespace tessera
