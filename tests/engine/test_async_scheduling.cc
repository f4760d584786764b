// Async scheduling (EngineConfig::async_scheduling): with a runner whose sampled tokens stay
// where the step ran, EngineCore launches step N+1 before step N's tokens reach the host; the
// scheduler decodes those pending tokens (ScheduledRequest::input_pending). The results must
// be those of the synchronous loop, whatever stops, aborts or block shortage happen while two
// steps are in flight. The runner here is a deterministic "model" (each token a function of
// the one before and its position) that checks every input it is given.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <unordered_map>

#include "engine/engine_core.h"

namespace tessera {
namespace {

constexpr int64_t kVocab = 97;
constexpr int32_t kEos = 3;

// The model: the token after `token` at position `pos`.
int32_t next_token(int32_t token, int32_t pos) {
  return static_cast<int32_t>((int64_t{token} * 31 + int64_t{pos} * 17 + 5) % kVocab);
}

// A runner that "launches asynchronously" and samples every token itself. It keeps the last
// step's samples, as a device would, to resolve the next step's pending inputs, and fails the
// test when an input is not the token the sequence holds there.
class ScriptedRunner : public ModelRunner {
 public:
  explicit ScriptedRunner(int32_t block_size) : block_size_(block_size) {}

  void launch(const SchedulerOutput& out, const RequestLookup& lookup) override {
    EXPECT_LT(in_flight_.size(), 2u);
    max_in_flight_ = std::max(max_in_flight_, in_flight_.size() + 1);
    std::vector<RequestStepOutput> rows(out.requests.size());
    std::unordered_map<RequestId, int32_t> sampled;
    for (size_t i = 0; i < out.requests.size(); ++i) {
      const ScheduledRequest& s = out.requests[i];
      const Request* r = lookup(s.id);
      EXPECT_NE(r, nullptr);
      if (r == nullptr) continue;
      EXPECT_GE(static_cast<int64_t>(s.block_ids.size()) * block_size_, s.num_computed_tokens + s.num_scheduled_tokens);
      int32_t token = -1;
      for (int32_t k = 0; k < s.num_scheduled_tokens; ++k) {
        const int32_t pos = s.num_computed_tokens + k;
        if (pos < r->num_tokens()) {
          token = r->all_token_ids[pos];
        } else {
          EXPECT_TRUE(s.input_pending && pos == r->num_tokens()) << "input beyond the known tokens";
          auto it = last_sampled_.find(s.id);
          EXPECT_NE(it, last_sampled_.end()) << "pending input the step before did not sample";
          token = it == last_sampled_.end() ? 0 : it->second;
          ++pending_inputs_;
        }
        // The token at pos must follow the one before (outputs only: prompts are free).
        if (pos > r->num_prompt_tokens()) {
          EXPECT_EQ(token, next_token(prev_of(*r, s, pos), pos - 1)) << "request " << s.id.value << " pos " << pos;
        }
        last_input_[s.id] = token;
      }
      if (s.samples) {
        rows[i].sampled_token = next_token(token, s.num_computed_tokens + s.num_scheduled_tokens - 1);
        sampled[s.id] = rows[i].sampled_token;
      }
    }
    last_sampled_ = std::move(sampled);
    in_flight_.push_back(std::move(rows));
  }
  void collect(const RequestLookup& lookup, std::vector<RequestStepOutput>* rows) override {
    ASSERT_FALSE(in_flight_.empty());
    *rows = std::move(in_flight_.front());
    in_flight_.pop_front();
    (void)lookup;  // EngineCore drops the outputs of requests that finished meanwhile
  }
  bool launches_async() const override { return true; }
  bool tokens_stay_on_device() const override { return true; }

  size_t max_in_flight() const { return max_in_flight_; }
  int64_t pending_inputs() const { return pending_inputs_; }

 private:
  // The token before position pos: known to the request, or the last input this runner saw.
  int32_t prev_of(const Request& r, const ScheduledRequest& s, int32_t pos) const {
    if (pos - 1 < r.num_tokens()) return r.all_token_ids[pos - 1];
    (void)s;
    return last_input_.at(r.id);
  }

  int32_t block_size_;
  std::deque<std::vector<RequestStepOutput>> in_flight_;
  std::unordered_map<RequestId, int32_t> last_sampled_;
  std::unordered_map<RequestId, int32_t> last_input_;
  size_t max_in_flight_ = 0;
  int64_t pending_inputs_ = 0;
};

struct Core {
  std::unique_ptr<EngineCore> core;
  ScriptedRunner* runner = nullptr;
};

Core make_core(bool async_scheduling, int64_t kv_blocks, int32_t max_num_seqs = 8) {
  ModelConfig m;
  m.architecture = "llama";
  m.vocab_size = kVocab;
  m.hidden_size = 8;
  m.intermediate_size = 16;
  m.num_hidden_layers = 1;
  m.num_attention_heads = 1;
  m.num_key_value_heads = 1;
  m.head_dim = 8;
  m.max_position_embeddings = 256;
  m.eos_token_ids = {kEos};
  EngineArgs a;
  a.block_size = 4;
  a.kv_cache_memory = kv_blocks * 2 * 8 * 4 * 2;  // K and V, head_dim 8, 4 tokens, 2 bytes
  a.max_model_len = 64;
  a.max_num_seqs = max_num_seqs;
  a.max_num_batched_tokens = 32;
  a.async_scheduling = async_scheduling;
  a.seed = 1;
  a.tuning = Tuning{};
  auto resolved = resolve_engine_config(a, m);
  EXPECT_TRUE(resolved.ok()) << resolved.error();
  EngineConfig c = *resolved;
  c.cache.kv_dtype = KvDtype::kBfloat16;
  Core out;
  auto core = EngineCore::create(m, c, [&out](const KvCachePlan& plan) -> Result<std::unique_ptr<ModelRunner>> {
    auto r = std::make_unique<ScriptedRunner>(plan.shape.block_size);
    out.runner = r.get();
    return std::unique_ptr<ModelRunner>(std::move(r));
  });
  EXPECT_TRUE(core.ok()) << core.error();
  out.core = std::move(*core);
  return out;
}

// What the model generates for a prompt: up to max_tokens, or through the first EOS.
std::vector<int32_t> expected(const std::vector<int32_t>& prompt, int32_t max_tokens, bool ignore_eos) {
  std::vector<int32_t> seq = prompt, out;
  while (static_cast<int32_t>(out.size()) < max_tokens) {
    const int32_t t = next_token(seq.back(), static_cast<int32_t>(seq.size()) - 1);
    seq.push_back(t);
    out.push_back(t);
    if (t == kEos && !ignore_eos) break;
  }
  return out;
}

struct Job {
  std::vector<int32_t> prompt;
  int32_t max_tokens;
  bool ignore_eos;
  int32_t stop_after = -1;  // the caller stops it after this many tokens (a stop string)
  int32_t abort_after = -1;  // the caller aborts it after this many tokens
};

std::vector<Job> jobs() {
  std::vector<Job> js;
  for (int i = 0; i < 12; ++i) {
    Job j;
    for (int k = 0; k < 3 + (i * 7) % 13; ++k) j.prompt.push_back(10 + (i * 5 + k * 3) % 80);
    j.max_tokens = 5 + (i * 11) % 30;
    j.ignore_eos = i % 3 == 0;
    if (i % 4 == 1) j.stop_after = 2 + i % 5;
    if (i == 6) j.abort_after = 4;
    js.push_back(std::move(j));
  }
  return js;
}

// Runs the jobs the way the offline API does (outputs processed while the next step runs;
// stops and aborts at once) and returns every request's tokens.
std::map<uint64_t, std::vector<int32_t>> run(Core& c, const std::vector<Job>& js) {
  std::map<uint64_t, std::vector<int32_t>> got;
  for (size_t i = 0; i < js.size(); ++i) {
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = js[i].max_tokens;
    p.ignore_eos = js[i].ignore_eos;
    auto r = std::make_unique<Request>(RequestId{i + 1}, js[i].prompt, p);
    r->arrival_seq = i + 1;
    EXPECT_TRUE(c.core->add_request(std::move(r)).ok());
    got[i + 1] = {};
  }
  std::map<uint64_t, bool> finished;
  std::vector<EngineStepOutput> outputs;
  auto process = [&] {
    for (const EngineStepOutput& o : outputs) {
      EXPECT_FALSE(finished[o.id.value]) << "output after the request finished: " << o.id.value;
      const Job& j = js[o.id.value - 1];
      if (o.new_token) got[o.id.value].push_back(*o.new_token);
      const int32_t n = static_cast<int32_t>(got[o.id.value].size());
      if (is_finished(o.status)) {
        finished[o.id.value] = true;
        c.core->take_finished(o.id);
      } else if (n == j.stop_after) {
        EXPECT_TRUE(c.core->stop_request(o.id));
        finished[o.id.value] = true;
        c.core->take_finished(o.id);
      } else if (n == j.abort_after) {
        EXPECT_TRUE(c.core->abort_request(o.id));
        finished[o.id.value] = true;
        c.core->take_finished(o.id);
      }
    }
    outputs.clear();
  };
  for (int steps = 0; c.core->has_unfinished() && c.core->launch_step(); ++steps) {
    process();
    outputs = c.core->finish_step();
    if (steps > 10000) {
      ADD_FAILURE() << "no end";
      break;
    }
  }
  process();
  return got;
}

void expect_results(const std::map<uint64_t, std::vector<int32_t>>& got, const std::vector<Job>& js) {
  for (const auto& [id, tokens] : got) {
    const Job& j = js[id - 1];
    std::vector<int32_t> want = expected(j.prompt, j.max_tokens, j.ignore_eos);
    const int32_t cut = j.stop_after > 0 ? j.stop_after : j.abort_after;
    if (cut > 0 && static_cast<int32_t>(want.size()) > cut) want.resize(cut);
    EXPECT_EQ(tokens, want) << "request " << id;
  }
}

TEST(AsyncScheduling, LookAheadStepsGiveTheSynchronousResults) {
  const std::vector<Job> js = jobs();
  Core sync = make_core(false, 256);
  const auto want = run(sync, js);
  expect_results(want, js);
  EXPECT_EQ(sync.runner->max_in_flight(), 1u);
  EXPECT_EQ(sync.runner->pending_inputs(), 0);

  Core async = make_core(true, 256);
  const auto got = run(async, js);
  EXPECT_EQ(got, want);
  EXPECT_EQ(async.runner->max_in_flight(), 2u);
  EXPECT_GT(async.runner->pending_inputs(), 50);
  EXPECT_EQ(async.core->stats().kv_cache_usage, 0.0);  // every block back
  EXPECT_FALSE(async.core->has_unfinished());
}

TEST(AsyncScheduling, OutOfBlocksTheNextStepWaitsAndPreempts) {
  // 24 blocks of 4 tokens for 8 sequences of up to ~45 tokens: look-ahead steps stall and
  // the synchronous steps after them preempt.
  const std::vector<Job> js = jobs();
  Core sync = make_core(false, 256);
  const auto want = run(sync, js);
  Core async = make_core(true, 24);
  const auto got = run(async, js);
  EXPECT_EQ(got, want);
  EXPECT_GT(async.core->stats().num_preemptions, 0);
  EXPECT_EQ(async.runner->max_in_flight(), 2u);
  EXPECT_EQ(async.core->stats().kv_cache_usage, 0.0);
}

TEST(AsyncScheduling, OneSequenceAtATime) {
  // max_num_seqs 1: admissions wait for the step in flight's request to finish; a request
  // ending for length is not looked ahead.
  const std::vector<Job> js = jobs();
  Core sync = make_core(false, 256, 1);
  Core async = make_core(true, 256, 1);
  EXPECT_EQ(run(async, js), run(sync, js));
  EXPECT_EQ(async.runner->max_in_flight(), 2u);
}

}  // namespace
}  // namespace tessera
