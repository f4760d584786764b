// Scheduler on a fake model runner whose "KV cache" stores the token written at each slot:
// before every step it checks that each scheduled request's block table reads back exactly
// its tokens [0, num_computed_tokens) (what attention would read), then writes the new ones.
// The sampled token is a function of the whole sequence, so a preempted request recomputes
// the same continuation.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <vector>

#include "sched/scheduler.h"

namespace tessera {
namespace {

constexpr int32_t kEos = 2;

struct FakeRunner {
  int32_t block_size;
  std::vector<int32_t> slots;  // token id per cache slot, -1 = never written
  std::vector<int32_t> host;   // the KV offload tier's slots, the same way
  FakeRunner(int32_t num_blocks, int32_t bs, int32_t host_blocks = 0)
      : block_size(bs), slots(static_cast<size_t>(num_blocks * bs), -1), host(static_cast<size_t>(host_blocks * bs), -1) {}

  // KV offload copies, as a runner does them before the forward: stores, then loads.
  void copy(const SchedulerOutput& out) {
    auto move = [&](const std::vector<int32_t>& from, int32_t fb, std::vector<int32_t>& to, int32_t tb) {
      for (int32_t i = 0; i < block_size; ++i) to.at(static_cast<size_t>(tb * block_size + i)) = from.at(static_cast<size_t>(fb * block_size + i));
    };
    for (const KvBlockCopy& c : out.kv_copies.stores) move(slots, c.device_block, host, c.host_block);
    for (const KvBlockCopy& c : out.kv_copies.loads) move(host, c.host_block, slots, c.device_block);
  }

  static int32_t next_token(const std::vector<int32_t>& seq) {
    uint64_t h = 1469598103934665603ULL;
    for (int32_t t : seq) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ULL;
    return 3 + static_cast<int32_t>(h % 997);  // never EOS (2)
  }

  // Returns the sampled tokens of the step (one per request that samples).
  std::vector<int32_t> run(const SchedulerOutput& out, const Scheduler& sched) {
    copy(out);
    std::vector<int32_t> sampled;
    for (const ScheduledRequest& s : out.requests) {
      const Request* r = sched.request(s.id);
      EXPECT_NE(r, nullptr);
      if (r == nullptr) continue;
      auto slot = [&](int32_t pos) { return s.block_ids.at(pos / block_size) * block_size + pos % block_size; };
      for (int32_t p = 0; p < s.num_computed_tokens; ++p) {
        EXPECT_EQ(slots[slot(p)], r->all_token_ids[p]) << "request " << s.id.value << " reads a wrong K/V at " << p;
      }
      for (int32_t p = s.num_computed_tokens; p < s.num_computed_tokens + s.num_scheduled_tokens; ++p) {
        EXPECT_NE(s.block_ids.at(p / block_size), 0) << "write into the null block";
        slots[slot(p)] = r->all_token_ids[p];
      }
      if (s.samples) {
        std::vector<int32_t> seq(r->all_token_ids.begin(), r->all_token_ids.begin() + s.num_computed_tokens + s.num_scheduled_tokens);
        sampled.push_back(next_token(seq));
      }
    }
    return sampled;
  }
};

std::vector<int32_t> prompt_of(int n, int32_t seed) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(3 + (seed * 131 + i * 17) % 900);
  return p;
}

// The scheduler's budgets for these tests (an engine resolves them from EngineArgs).
SchedulerConfig test_config() {
  SchedulerConfig c;
  c.max_num_batched_tokens = 2048;
  c.max_num_seqs = 256;
  c.max_model_len = 2048;
  c.enable_chunked_prefill = true;
  return c;
}

struct Harness {
  KvCacheManager kv;
  Scheduler sched;
  FakeRunner runner;
  std::map<uint64_t, std::unique_ptr<Request>> finished;
  uint64_t next_seq = 0;
  Harness(int32_t num_blocks, int32_t block_size, SchedulerConfig cfg, bool prefix_caching = true,
          int32_t host_blocks = 0)
      : kv(num_blocks, block_size, prefix_caching, host_blocks), sched(cfg, kv, {kEos}),
        runner(num_blocks, block_size, host_blocks) {}

  RequestId add(uint64_t id, std::vector<int32_t> prompt, int64_t max_tokens, int32_t priority = 0) {
    SamplingParams p;
    p.max_tokens = max_tokens;
    auto r = std::make_unique<Request>(RequestId{id}, std::move(prompt), p);
    r->priority = priority;
    r->arrival_seq = next_seq++;
    sched.add_request(std::move(r));
    return RequestId{id};
  }
  SchedulerOutput step() {
    SchedulerOutput out = sched.schedule();
    const auto sampled = runner.run(out, sched);
    for (const StepResult& res : sched.update_from_output(out, sampled)) {
      if (is_finished(res.status)) finished[res.id.value] = sched.take_finished(res.id);
    }
    EXPECT_EQ(kv.check_invariants(), "");
    return out;
  }
  void run_to_completion(int max_steps = 10000) {
    for (int i = 0; i < max_steps && sched.has_unfinished(); ++i) step();
    EXPECT_FALSE(sched.has_unfinished());
  }
  void expect_all_blocks_free() {
    EXPECT_EQ(kv.num_free_blocks(), kv.pool().num_blocks() - 1);
    EXPECT_EQ(kv.num_requests(), 0u);
  }
};

std::vector<std::pair<uint64_t, int32_t>> step_shape(const SchedulerOutput& out) {
  std::vector<std::pair<uint64_t, int32_t>> v;
  for (const auto& s : out.requests) v.emplace_back(s.id.value, s.num_scheduled_tokens);
  return v;
}
using Shape = std::vector<std::pair<uint64_t, int32_t>>;

TEST(Scheduler, TokenBudgetChunksPrefillAndDecodesGoFirst) {
  SchedulerConfig cfg = test_config();
  cfg.max_num_batched_tokens = 16;
  Harness h(64, 4, cfg);
  h.add(1, prompt_of(10, 1), 3);
  h.add(2, prompt_of(10, 2), 3);
  h.add(3, prompt_of(10, 3), 3);
  EXPECT_EQ(step_shape(h.step()), (Shape{{1, 10}, {2, 6}}));       // r2 chunked
  EXPECT_EQ(step_shape(h.step()), (Shape{{1, 1}, {2, 4}, {3, 10}}));  // decode first
  EXPECT_EQ(step_shape(h.step()), (Shape{{1, 1}, {2, 1}, {3, 1}}));
  h.run_to_completion();
  ASSERT_EQ(h.finished.size(), 3u);
  for (auto& [id, r] : h.finished) {
    EXPECT_EQ(r->num_output_tokens(), 3);
    EXPECT_EQ(r->status, RequestStatus::kFinishedLength);
  }
  h.expect_all_blocks_free();
}

TEST(Scheduler, WithoutChunkedPrefillAPromptWaitsUntilItFitsWhole) {
  SchedulerConfig cfg = test_config();
  cfg.max_num_batched_tokens = 16;
  cfg.enable_chunked_prefill = false;
  Harness h(64, 4, cfg);
  h.add(1, prompt_of(10, 1), 2);
  h.add(2, prompt_of(10, 2), 2);
  EXPECT_EQ(step_shape(h.step()), (Shape{{1, 10}}));
  EXPECT_EQ(step_shape(h.step()), (Shape{{1, 1}, {2, 10}}));
  h.run_to_completion();
  h.expect_all_blocks_free();
}

TEST(Scheduler, MaxNumSeqsLimitsRunningRequests) {
  SchedulerConfig cfg = test_config();
  cfg.max_num_seqs = 2;
  Harness h(64, 4, cfg);
  for (uint64_t i = 1; i <= 3; ++i) h.add(i, prompt_of(5, static_cast<int32_t>(i)), 2);
  EXPECT_EQ(step_shape(h.step()), (Shape{{1, 5}, {2, 5}}));
  EXPECT_EQ(step_shape(h.step()), (Shape{{1, 1}, {2, 1}}));
  EXPECT_EQ(step_shape(h.step()), (Shape{{3, 5}}));  // 1 and 2 finished after 2 tokens
  h.run_to_completion();
  h.expect_all_blocks_free();
}

TEST(Scheduler, PreemptsTheNewestWhenBlocksRunOutAndResumesIdentically) {
  SchedulerConfig cfg = test_config();
  // Reference run with plenty of blocks.
  Harness big(64, 4, cfg);
  big.add(1, prompt_of(8, 1), 12);
  big.add(2, prompt_of(8, 2), 12);
  big.run_to_completion();
  // 7 usable blocks: both prompts fit (2 + 2 blocks) but both cannot reach 20 tokens (5 + 5).
  Harness h(8, 4, cfg, /*prefix_caching=*/false);
  h.add(1, prompt_of(8, 1), 12);
  h.add(2, prompt_of(8, 2), 12);
  bool preempted_2 = false;
  for (int i = 0; i < 200 && h.sched.has_unfinished(); ++i) {
    const SchedulerOutput out = h.step();
    for (RequestId id : out.preempted) {
      EXPECT_EQ(id.value, 2u);  // the newest goes
      preempted_2 = true;
    }
  }
  EXPECT_TRUE(preempted_2);
  EXPECT_EQ(h.sched.num_preemptions(), h.finished.at(2)->num_preemptions);
  for (uint64_t id : {1, 2}) EXPECT_EQ(h.finished.at(id)->output_token_ids, big.finished.at(id)->output_token_ids);
  h.expect_all_blocks_free();
}

TEST(Scheduler, PriorityOrdersAdmissionAndPreemption) {
  SchedulerConfig cfg = test_config();
  cfg.max_num_seqs = 1;
  Harness h(64, 4, cfg);
  h.add(1, prompt_of(4, 1), 1, /*priority=*/5);
  h.add(2, prompt_of(4, 2), 1, /*priority=*/0);
  h.add(3, prompt_of(4, 3), 1, /*priority=*/5);
  EXPECT_EQ(step_shape(h.step()), (Shape{{2, 4}}));
  EXPECT_EQ(step_shape(h.step()), (Shape{{1, 4}}));
  EXPECT_EQ(step_shape(h.step()), (Shape{{3, 4}}));
  h.run_to_completion();

  // Out of blocks, the low-priority request is preempted even though it arrived first.
  Harness p(6, 4, test_config(), false);  // 5 usable blocks
  p.add(1, prompt_of(8, 1), 12, /*priority=*/9);
  p.add(2, prompt_of(8, 2), 12, /*priority=*/0);
  std::vector<uint64_t> victims;
  for (int i = 0; i < 200 && p.sched.has_unfinished(); ++i) {
    for (RequestId id : p.step().preempted) victims.push_back(id.value);
  }
  ASSERT_FALSE(victims.empty());
  EXPECT_EQ(victims.front(), 1u);
  p.expect_all_blocks_free();
}

TEST(Scheduler, AbortFreesBlocksAtOnce) {
  Harness h(64, 4, test_config());
  h.add(1, prompt_of(9, 1), 50);
  h.add(2, prompt_of(9, 2), 50);
  h.step();
  const int32_t free_before = h.kv.num_free_blocks();
  EXPECT_TRUE(h.sched.finish_request(RequestId{1}, RequestStatus::kFinishedAborted));
  EXPECT_EQ(h.kv.num_free_blocks(), free_before + 3);
  EXPECT_FALSE(h.sched.finish_request(RequestId{1}, RequestStatus::kFinishedAborted));
  EXPECT_EQ(h.sched.take_finished(RequestId{1})->status, RequestStatus::kFinishedAborted);
  // A waiting request can be aborted too.
  h.add(3, prompt_of(9, 3), 50);
  EXPECT_TRUE(h.sched.finish_request(RequestId{3}, RequestStatus::kFinishedAborted));
  h.sched.take_finished(RequestId{3});
  h.run_to_completion();
  h.expect_all_blocks_free();
}

TEST(Scheduler, EosStopTokensAndMinTokens) {
  Harness h(64, 4, test_config());
  // Pick the fake runner's first token as a stop token of request 1.
  const auto prompt = prompt_of(5, 1);
  const int32_t first = FakeRunner::next_token(prompt);
  SamplingParams p;
  p.max_tokens = 10;
  p.stop_token_ids = {first};
  auto r = std::make_unique<Request>(RequestId{1}, prompt, p);
  h.sched.add_request(std::move(r));
  p.min_tokens = 3;  // the same stop token is ignored until 3 tokens are out
  auto r2 = std::make_unique<Request>(RequestId{2}, prompt, p);
  r2->arrival_seq = 1;
  h.sched.add_request(std::move(r2));
  h.run_to_completion();
  EXPECT_EQ(h.finished.at(1)->output_token_ids, std::vector<int32_t>{first});
  EXPECT_EQ(h.finished.at(1)->status, RequestStatus::kFinishedStopped);
  EXPECT_EQ(h.finished.at(1)->stop_reason, first);
  EXPECT_GE(h.finished.at(2)->num_output_tokens(), 3);
  h.expect_all_blocks_free();
}

TEST(Scheduler, PrefixHitsSkipComputeAndReadTheSharedBlocks) {
  Harness h(64, 4, test_config());
  h.add(1, prompt_of(13, 7), 2);
  h.step();
  h.add(2, prompt_of(13, 7), 2);
  const SchedulerOutput out = h.step();
  ASSERT_EQ(out.requests.size(), 2u);
  EXPECT_EQ(out.requests[1].num_computed_tokens, 12);  // 3 full blocks hit
  EXPECT_EQ(out.requests[1].num_scheduled_tokens, 1);
  h.run_to_completion();
  EXPECT_EQ(h.finished.at(1)->output_token_ids, h.finished.at(2)->output_token_ids);
  h.expect_all_blocks_free();
}

// Thousands of arrivals, aborts, preemptions and completions; the fake runner checks every
// read, the manager its invariants, and every request ends finished or aborted.
void randomized_arrivals_aborts_and_preemptions(int32_t host_blocks) {
  std::mt19937 rng(11);
  SchedulerConfig cfg = test_config();
  cfg.max_num_batched_tokens = 48;
  cfg.max_num_seqs = 12;
  cfg.max_model_len = 200;
  Harness h(40, 4, cfg, /*prefix_caching=*/true, host_blocks);
  uint64_t next_id = 1;
  int aborted = 0;
  std::vector<uint64_t> live;
  for (int step = 0; step < 3000; ++step) {
    if (rng() % 3 == 0 && next_id <= 2000) {
      const int len = 1 + static_cast<int>(rng() % 40);
      const int32_t seed = static_cast<int32_t>(rng() % 6);  // shared prefixes
      auto prompt = prompt_of(len, seed);
      h.add(next_id, prompt, 1 + static_cast<int64_t>(rng() % 30), static_cast<int32_t>(rng() % 3));
      live.push_back(next_id++);
    }
    if (rng() % 10 == 0 && !live.empty()) {
      const uint64_t id = live[rng() % live.size()];
      if (h.sched.finish_request(RequestId{id}, RequestStatus::kFinishedAborted)) {
        h.finished[id] = h.sched.take_finished(RequestId{id});
        ++aborted;
      }
    }
    h.step();
    std::erase_if(live, [&](uint64_t id) { return h.finished.count(id) > 0; });
  }
  h.run_to_completion();
  EXPECT_EQ(h.finished.size(), next_id - 1);
  for (auto& [id, r] : h.finished) EXPECT_TRUE(is_finished(r->status));
  EXPECT_GT(aborted, 0);
  EXPECT_GT(h.sched.num_preemptions(), 0);
  h.expect_all_blocks_free();
  if (host_blocks > 0) {
    EXPECT_GT(h.kv.offload_stores(), 0);
    EXPECT_GT(h.kv.offload_loads(), 0);
  }
}

TEST(Scheduler, RandomizedArrivalsAbortsAndPreemptions) { randomized_arrivals_aborts_and_preemptions(0); }

// The same with a host tier: every step's copies run before its forward (the fake runner
// checks that each request reads back exactly its tokens, loaded blocks included).
TEST(Scheduler, RandomizedRunsWithKvOffloadReadBackTheirTokens) { randomized_arrivals_aborts_and_preemptions(24); }

// Look-ahead scheduling (a step in flight whose tokens stay on the device): a request that
// sampled decodes its pending token at position num_tokens(), unless that token ends it for
// length; out of blocks, the schedule stops instead of preempting; the results of both steps
// then apply in order, and a request finished by the first has the second's dropped.
TEST(Scheduler, LookAheadDecodesPendingTokensAndNeverPreempts) {
  SchedulerConfig cfg = test_config();
  cfg.max_num_batched_tokens = 64;
  Harness h(9, 4, cfg);  // 8 usable blocks of 4 tokens
  h.add(1, prompt_of(6, 1), 2);   // two blocks; ends at its second token
  h.add(2, prompt_of(7, 2), 10);  // two blocks
  const SchedulerOutput first = h.sched.schedule();
  ASSERT_EQ(first.requests.size(), 2u);
  EXPECT_TRUE(first.requests[0].samples && first.requests[1].samples);
  EXPECT_FALSE(first.requests[0].input_pending);

  // Step 2 while step 1 runs: both decode their pending token.
  const SchedulerOutput second = h.sched.schedule(/*look_ahead=*/true);
  ASSERT_EQ(second.requests.size(), 2u);
  for (const ScheduledRequest& s : second.requests) {
    const Request* r = h.sched.request(s.id);
    EXPECT_TRUE(s.input_pending && s.samples);
    EXPECT_EQ(s.num_computed_tokens, r->num_tokens());  // the pending token's position
    EXPECT_EQ(s.num_scheduled_tokens, 1);
    EXPECT_EQ(r->num_pending_tokens, 2);
  }
  // Step 1's results, then step 2's: request 1 ends at its second token (max_tokens 2).
  const std::vector<StepResult> r1 = h.sched.update_from_output(first, std::vector<int32_t>{100, 200});
  EXPECT_EQ(r1[0].status, RequestStatus::kRunning);
  const std::vector<StepResult> r2 = h.sched.update_from_output(second, std::vector<int32_t>{101, 201});
  EXPECT_EQ(r2[0].status, RequestStatus::kFinishedLength);
  EXPECT_EQ(h.sched.request(RequestId{1})->output_token_ids, (std::vector<int32_t>{100, 101}));
  EXPECT_EQ(h.sched.request(RequestId{2})->output_token_ids, (std::vector<int32_t>{200, 201}));
  EXPECT_EQ(h.sched.request(RequestId{2})->num_pending_tokens, 0);

  // Request 2 alone: a look-ahead behind a step that will end it for length schedules nothing.
  h.add(3, prompt_of(24, 3), 30);  // 6 blocks: 5 are free beside request 2's 3
  const SchedulerOutput third = h.sched.schedule();
  ASSERT_EQ(third.requests.size(), 1u);  // request 2; request 3 waits for blocks
  EXPECT_EQ(h.sched.num_waiting(), 1u);
  const SchedulerOutput fourth = h.sched.schedule(/*look_ahead=*/true);
  EXPECT_EQ(fourth.requests.size(), 1u);
  EXPECT_TRUE(fourth.preempted.empty());
  EXPECT_EQ(h.sched.num_preemptions(), 0);
  // A request finished by the caller while both steps ran: its results are dropped.
  EXPECT_TRUE(h.sched.finish_request(RequestId{2}, RequestStatus::kFinishedStopped));
  for (const SchedulerOutput* out : {&third, &fourth}) {
    const std::vector<StepResult> res = h.sched.update_from_output(*out, std::vector<int32_t>{7});
    ASSERT_EQ(res.size(), 1u);
    EXPECT_TRUE(res[0].dropped);
  }
  EXPECT_EQ(h.sched.request(RequestId{2})->output_token_ids.size(), 2u);
}

TEST(Scheduler, LookAheadOutOfBlocksStallsInsteadOfPreempting) {
  SchedulerConfig cfg = test_config();
  cfg.max_num_batched_tokens = 64;
  Harness h(5, 4, cfg);  // 4 usable blocks of 4 tokens
  h.add(1, prompt_of(8, 1), 20);  // exactly 2 blocks: its first decode needs a third
  h.add(2, prompt_of(8, 2), 20);  // 2 blocks
  const SchedulerOutput first = h.sched.schedule();
  ASSERT_EQ(first.requests.size(), 2u);
  EXPECT_EQ(h.kv.num_free_blocks(), 0);
  const SchedulerOutput second = h.sched.schedule(/*look_ahead=*/true);
  EXPECT_TRUE(second.look_ahead_stalled);
  EXPECT_TRUE(second.requests.empty());
  EXPECT_TRUE(second.preempted.empty());
  EXPECT_EQ(h.sched.num_preemptions(), 0);
  h.sched.update_from_output(first, std::vector<int32_t>{50, 60});
  // The next step, scheduled with nothing in flight, preempts as usual.
  const SchedulerOutput third = h.sched.schedule();
  EXPECT_EQ(third.preempted.size(), 1u);
  EXPECT_EQ(h.kv.check_invariants(), "");
}

}  // namespace
}  // namespace tessera
