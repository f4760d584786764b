// AsyncEngine, the server's engine: its streams carry what the offline API returns (text,
// tokens, finish and stop reasons, stop strings cut across tokens, n > 1 with seeds), aborts
// free the KV blocks before the next step, and it stays consistent under many concurrent
// producers (checked with the fake core, whose outputs are known).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/test_paths.h"
#include "engine/async_engine.h"
#include "engine/engine_setup.h"
#include "engine/fake_engine_core.h"
#include "tessera/llm.h"

namespace tessera {
namespace {

std::string stories_gguf() { return testing::test_data() + "/stories260K/stories260K-f32.gguf"; }

EngineArgs quiet(const std::string& model) {
  EngineArgs a;
  a.device = "cpu";  // the CPU engine's behaviour; the CUDA engine has its own tests
  a.model = model;
  a.disable_progress_bar = true;
  a.disable_log_stats = true;
  a.kv_cache_memory = int64_t{64} << 20;
  return a;
}

// Everything a stream produced, per completion index.
struct Collected {
  std::vector<std::string> text;
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::string> finish_reason;
  std::vector<std::optional<std::string>> stop_string;
  std::string error;
  int deltas_after_finish = 0;
};

Collected collect(RequestStream& s, int64_t n) {
  Collected c;
  c.text.resize(n);
  c.tokens.resize(n);
  c.finish_reason.resize(n);
  c.stop_string.resize(n);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (;;) {
    StreamBatch b = s.take();
    for (const CompletionDelta& d : b.deltas) {
      if (!c.finish_reason[d.index].empty()) ++c.deltas_after_finish;
      c.text[d.index] += d.text;
      c.tokens[d.index].insert(c.tokens[d.index].end(), d.token_ids.begin(), d.token_ids.end());
      if (!d.finish_reason.empty()) {
        c.finish_reason[d.index] = d.finish_reason;
        c.stop_string[d.index] = d.stop_string;
      }
    }
    if (b.finished) {
      c.error = b.error;
      return c;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "stream did not finish";
      return c;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

struct Served {
  LoadedEngine loaded;
  std::unique_ptr<AsyncEngine> engine;
};

// A core that says its steps run asynchronously (as a device runner's do), so the AsyncEngine
// processes each step's outputs after launching the next one and defers the stops it finds
// then; on the CPU the step still computes inside launch_step.
class OverlappingCore : public EngineCoreBase {
 public:
  explicit OverlappingCore(std::unique_ptr<EngineCoreBase> inner) : inner_(std::move(inner)) {}
  Status add_request(std::unique_ptr<Request> request) override { return inner_->add_request(std::move(request)); }
  bool abort_request(RequestId id) override { return inner_->abort_request(id); }
  bool stop_request(RequestId id) override { return inner_->stop_request(id); }
  std::vector<EngineStepOutput> step() override { return inner_->step(); }
  bool launch_step() override { return inner_->launch_step(); }
  std::vector<EngineStepOutput> finish_step() override { return inner_->finish_step(); }
  bool launches_async() const override { return true; }
  bool has_unfinished() const override { return inner_->has_unfinished(); }
  std::unique_ptr<Request> take_finished(RequestId id) override { return inner_->take_finished(id); }
  EngineStats stats() const override { return inner_->stats(); }
  int32_t max_model_len() const override { return inner_->max_model_len(); }
  int64_t vocab_size() const override { return inner_->vocab_size(); }
  std::vector<int32_t> eos_token_ids() const override { return inner_->eos_token_ids(); }

 private:
  std::unique_ptr<EngineCoreBase> inner_;
};

Served serve(const EngineArgs& args, bool overlapping = false) {
  Served s;
  auto l = load_engine(args);
  EXPECT_TRUE(l.ok()) << l.error();
  s.loaded = std::move(*l);
  std::unique_ptr<EngineCoreBase> core = std::move(s.loaded.core);
  if (overlapping) core = std::make_unique<OverlappingCore>(std::move(core));
  s.engine = std::make_unique<AsyncEngine>(std::move(core), s.loaded.tokenizer.get());
  return s;
}

std::vector<int32_t> encode(const Served& s, const std::string& text) {
  auto ids = s.loaded.tokenizer->encode(text, true);
  EXPECT_TRUE(ids.ok());
  return *ids;
}

// Both ways of running the loop: each step's outputs processed after the step (a host
// runner), or while the next step runs (a device runner), stops found then deferred.
class AsyncEngineLoop : public ::testing::TestWithParam<bool> {};

TEST_P(AsyncEngineLoop, StreamsCarryWhatTheOfflineApiReturns) {
  auto llm = LLM::create(quiet(stories_gguf()));
  ASSERT_TRUE(llm.ok()) << llm.error();
  Served served = serve(quiet(stories_gguf()), GetParam());
  const std::vector<std::string> prompts = {"Once upon a time", "The cat", "Lily and Tom went to the park", "One day"};
  // Greedy to the length limit, then with a stop string from the middle of that text.
  SamplingParams greedy;
  greedy.temperature = 0;
  greedy.max_tokens = 48;
  std::vector<PromptInput> inputs(prompts.begin(), prompts.end());
  const auto offline = (*llm)->generate(inputs, greedy);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string& full = offline[i].outputs[0].text;
    ASSERT_GT(full.size(), 40u);
    SamplingParams stopped = greedy;
    stopped.stop = {full.substr(full.size() / 2 - 1, 5), "zzzz never"};
    const auto offline_stop = (*llm)->generate({inputs[i]}, stopped);
    for (const SamplingParams* p : {&greedy, &stopped}) {
      auto stream = served.engine->add_request(GenerateRequest{encode(served, prompts[i]), *p, 0, nullptr});
      const Collected c = collect(*stream, 1);
      const CompletionOutput& want = p == &greedy ? offline[i].outputs[0] : offline_stop[0].outputs[0];
      EXPECT_EQ(c.error, "");
      EXPECT_EQ(c.text[0], want.text) << prompts[i];
      EXPECT_EQ(c.tokens[0], want.token_ids) << prompts[i];
      EXPECT_EQ(c.finish_reason[0], want.finish_reason) << prompts[i];
      EXPECT_EQ(c.stop_string[0], want.stop_string) << prompts[i];
      EXPECT_EQ(c.deltas_after_finish, 0);
    }
  }
  // n = 3 seeded samples: the same three completions as offline (seed + i each).
  SamplingParams sampled;
  sampled.n = 3;
  sampled.seed = 1234;
  sampled.max_tokens = 24;
  const auto offline_n = (*llm)->generate({inputs[0]}, sampled);
  auto stream = served.engine->add_request(GenerateRequest{encode(served, prompts[0]), sampled, 0, nullptr});
  const Collected c = collect(*stream, 3);
  for (int64_t k = 0; k < 3; ++k) {
    EXPECT_EQ(c.text[k], offline_n[0].outputs[k].text) << "completion " << k;
    EXPECT_EQ(c.tokens[k], offline_n[0].outputs[k].token_ids) << "completion " << k;
  }
  EXPECT_NE(c.text[0], c.text[1]);
}

INSTANTIATE_TEST_SUITE_P(AsyncEngine, AsyncEngineLoop, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "OverlappingSteps" : "WholeSteps"; });

TEST(AsyncEngine, AbortFreesTheBlocksBeforeTheNextStep) {
  Served served = serve(quiet(stories_gguf()));
  SamplingParams p;
  p.max_tokens = 400;
  p.ignore_eos = true;
  std::atomic<int> wakes{0};
  auto stream = served.engine->add_request(GenerateRequest{encode(served, "Once upon a time"), p, 0, [&] { ++wakes; }});
  size_t tokens = 0;
  while (tokens < 5) {
    for (const auto& d : stream->take().deltas) tokens += d.token_ids.size();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GT(wakes.load(), 0);
  EXPECT_GT(served.engine->metrics().kv_cache_usage, 0.0);
  served.engine->abort(stream->id());
  const Collected c = collect(*stream, 1);
  EXPECT_EQ(c.finish_reason[0], "abort");
  EXPECT_LT(c.tokens[0].size(), 400u);
  EXPECT_EQ(served.engine->num_unfinished(), 0u);
  // The metrics refresh after the loop turn that handled the abort.
  for (int i = 0; i < 200 && served.engine->metrics().kv_cache_usage > 0.0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const EngineMetrics m = served.engine->metrics();
  EXPECT_EQ(m.kv_cache_usage, 0.0);
  EXPECT_EQ(m.num_requests_running, 0);
  EXPECT_EQ(m.request_success[2], 1);  // one abort
}

TEST(AsyncEngine, RejectedRequestsReportAnError) {
  Served served = serve(quiet(stories_gguf()));
  SamplingParams p;
  p.max_tokens = 4;
  std::vector<int32_t> too_long(600, 5);  // stories260K's context is 512
  EXPECT_FALSE(served.engine->validate(too_long, p).ok());
  auto stream = served.engine->add_request(GenerateRequest{too_long, p, 0, nullptr});
  const Collected c = collect(*stream, 1);
  EXPECT_NE(c.error.find("maximum context length is 512"), std::string::npos) << c.error;
  EXPECT_EQ(served.engine->num_unfinished(), 0u);
}

TEST(AsyncEngine, ManyProducersAndAbortsWithTheFakeCore) {
  auto tok = tokenizer::load_tokenizer(stories_gguf());
  ASSERT_TRUE(tok.ok()) << tok.error();
  AsyncEngine engine(std::make_unique<FakeEngineCore>(512, 512, 64, std::vector<int32_t>{2}), tok->get());
  constexpr int kThreads = 4, kPerThread = 50;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        SamplingParams p;
        p.max_tokens = 20 + i % 7;
        p.n = 1 + i % 3;
        const std::vector<int32_t> prompt = {100 + t, 200 + i, 300};
        auto s = engine.add_request(GenerateRequest{prompt, p, 0, nullptr});
        const bool abort = i % 5 == 0;
        if (abort) engine.abort(s->id());
        const Collected c = collect(*s, p.n);
        for (int64_t k = 0; k < p.n; ++k) {
          if (abort && c.finish_reason[k] == "abort") continue;
          // The fake core echoes the prompt: token j is prompt[j % 3].
          bool ok = c.finish_reason[k] == "length" && static_cast<int64_t>(c.tokens[k].size()) == p.max_tokens;
          for (size_t j = 0; ok && j < c.tokens[k].size(); ++j) ok = c.tokens[k][j] == prompt[j % 3];
          if (!ok || c.deltas_after_finish != 0) ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(engine.num_unfinished(), 0u);
  const EngineMetrics m = engine.metrics();
  EXPECT_GT(m.request_success[1], 0);
  EXPECT_GT(m.request_success[2], 0);
}

}  // namespace
}  // namespace tessera
