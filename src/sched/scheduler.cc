#include "sched/scheduler.h"

#include <algorithm>
#include <chrono>

#include "common/check.h"

namespace tessera {
namespace {

bool runs_before(const Request* a, const Request* b) {
  return a->priority != b->priority ? a->priority < b->priority : a->arrival_seq < b->arrival_seq;
}

}  // namespace

Scheduler::Scheduler(const SchedulerConfig& config, KvCacheManager& kv, std::vector<int32_t> eos_token_ids)
    : config_(config), kv_(kv), eos_token_ids_(std::move(eos_token_ids)) {
  TESSERA_CHECK(config.max_num_batched_tokens > 0 && config.max_num_seqs > 0 && config.max_model_len > 1);
}

void Scheduler::add_request(std::unique_ptr<Request> request) {
  TESSERA_CHECK(request->num_prompt_tokens() > 0 && request->num_prompt_tokens() < config_.max_model_len);
  TESSERA_CHECK(!requests_.count(request->id));
  Request* r = request.get();
  r->status = RequestStatus::kWaiting;
  requests_.emplace(r->id, std::move(request));
  insert_waiting(r);
}

void Scheduler::insert_waiting(Request* r) {
  auto pos = std::upper_bound(waiting_.begin(), waiting_.end(), r, runs_before);
  waiting_.insert(pos, r);
}

void Scheduler::remove_from_queues(Request* r) {
  if (auto it = std::find(running_.begin(), running_.end(), r); it != running_.end()) running_.erase(it);
  if (auto it = std::find(waiting_.begin(), waiting_.end(), r); it != waiting_.end()) waiting_.erase(it);
}

void Scheduler::preempt(Request* r) {
  kv_.free(r->id);
  r->status = RequestStatus::kWaiting;
  r->num_computed_tokens = 0;
  r->num_pending_tokens = 0;  // no step is in flight: at most this step's, now taken back
  ++r->num_preemptions;
  ++num_preemptions_;
  running_.erase(std::find(running_.begin(), running_.end(), r));
  insert_waiting(r);
}

SchedulerOutput Scheduler::schedule(bool look_ahead) {
  SchedulerOutput out;
  int32_t budget = config_.max_num_batched_tokens;
  auto emit = [&](Request* r, int32_t n, bool input_pending) {
    ScheduledRequest s;
    s.id = r->id;
    s.num_computed_tokens = r->num_computed_tokens;
    s.num_scheduled_tokens = n;
    const std::span<const BlockId> blocks = kv_.blocks(r->id);
    s.block_ids.resize(blocks.size());  // one allocation per request and step
    for (size_t i = 0; i < blocks.size(); ++i) s.block_ids[i] = blocks[i].value;
    s.input_pending = input_pending;
    s.samples = r->num_computed_tokens + n == r->num_tokens() + (input_pending ? 1 : 0);
    if (s.samples) ++r->num_pending_tokens;
    out.requests.push_back(std::move(s));
    out.total_num_scheduled_tokens += n;
    r->num_computed_tokens += n;
    budget -= n;
  };

  // 1. Running requests, in admission order: one decode token or the next prefill chunk.
  std::vector<Request*> scheduled;
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Request* r = running_[i];
    // A token sampled by the step in flight: decode it, unless it ends the request for length.
    const bool pending = r->num_pending_tokens > 0;
    if (pending) {
      TESSERA_CHECK(look_ahead && r->num_pending_tokens == 1 && r->num_computed_tokens == r->num_tokens());
      if (r->num_output_tokens() + 1 >= r->params.max_tokens || r->num_tokens() + 1 >= config_.max_model_len) {
        ++i;
        continue;
      }
    }
    const int32_t n = pending ? 1 : std::min(r->num_tokens() - r->num_computed_tokens, budget);
    if (n <= 0) {
      ++i;
      continue;
    }
    bool fits = false;
    while (true) {
      if (kv_.allocate_slots(r->id, r->all_token_ids, r->num_computed_tokens, n, {}, r->cache_keys)) {
        fits = true;
        break;
      }
      // Look-ahead steps never preempt (the step in flight holds the victims' results):
      // this one ends here, and the next is scheduled after the step in flight.
      if (look_ahead) {
        out.look_ahead_stalled = true;
        break;
      }
      // Out of blocks: preempt the lowest-priority, newest running request.
      Request* victim = *std::max_element(running_.begin(), running_.end(), runs_before);
      if (auto it = std::find(scheduled.begin(), scheduled.end(), victim); it != scheduled.end()) {
        // Already scheduled this step: take its tokens back out of the step.
        auto s = std::find_if(out.requests.begin(), out.requests.end(), [&](const auto& q) { return q.id == victim->id; });
        // The blocks its tokens would have filled were cached when scheduled: not any more.
        kv_.uncache_unwritten(victim->id, s->num_computed_tokens);
        budget += s->num_scheduled_tokens;
        out.total_num_scheduled_tokens -= s->num_scheduled_tokens;
        out.requests.erase(s);
        scheduled.erase(it);
      }
      const bool self = victim == r;
      const size_t victim_idx = static_cast<size_t>(std::find(running_.begin(), running_.end(), victim) - running_.begin());
      preempt(victim);
      out.preempted.push_back(victim->id);
      if (victim_idx < i) --i;
      if (self) break;
    }
    if (out.look_ahead_stalled) break;
    if (!fits) continue;  // r itself was preempted; running_[i] is now the next request
    emit(r, n, pending);
    scheduled.push_back(r);
    ++i;
  }

  // 2. Waiting requests, unless this step had to preempt (no room to grow).
  if (out.preempted.empty() && !out.look_ahead_stalled) {
    while (!waiting_.empty() && budget > 0 && static_cast<int32_t>(running_.size()) < config_.max_num_seqs) {
      Request* r = waiting_.front();
      // Prompt logprobs need logits at every prompt position: no cached prefix for them.
      const ComputedBlocks hit = r->params.prompt_logprobs >= 0
                                     ? ComputedBlocks{}
                                     : kv_.get_computed_blocks(r->id, r->all_token_ids, r->cache_keys);
      const int32_t remaining = r->num_tokens() - hit.num_computed_tokens;
      if (!config_.enable_chunked_prefill && remaining > budget) break;
      const int32_t n = std::min(remaining, budget);
      if (!kv_.allocate_slots(r->id, r->all_token_ids, hit.num_computed_tokens, n, hit, r->cache_keys)) {
        kv_.free(r->id);  // drops the hashes get_computed_blocks kept
        break;
      }
      waiting_.pop_front();
      r->status = RequestStatus::kRunning;
      r->num_computed_tokens = hit.num_computed_tokens;
      if (r->num_cached_tokens < 0) r->num_cached_tokens = hit.num_computed_tokens;
      if (r->first_scheduled_time == 0.0) {
        r->first_scheduled_time =
            std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
      }
      running_.push_back(r);
      emit(r, n, false);
    }
  }
  // The copies this step's allocations need. A step left empty (its only request preempted
  // itself) keeps them for the next one: the blocks they read are not written before.
  if (!out.empty()) out.kv_copies = kv_.take_copies();
  return out;
}

bool Scheduler::constraint_ends(Request* r, int32_t token) {
  if (r->constraint == nullptr) return false;
  if (!r->constraint_start_after.empty()) {  // free text (reasoning) until it ends with the start marker
    const std::vector<int32_t>& m = r->constraint_start_after;
    const std::vector<int32_t>& out = r->output_token_ids;
    if (out.size() >= m.size() && std::equal(m.begin(), m.end(), out.end() - static_cast<std::ptrdiff_t>(m.size()))) {
      r->constraint_start_after.clear();
    }
    return false;
  }
  // The sampler masked what the grammar rejects, so a refusal cannot happen; if it did, the
  // output could not continue validly: it stops there.
  if (!r->constraint->accept(token) || r->constraint->is_terminated()) {
    r->status = RequestStatus::kFinishedStopped;
    return true;
  }
  return false;
}

bool Scheduler::check_stop(Request* r, int32_t token) {
  const SamplingParams& p = r->params;
  const bool min_reached = r->num_output_tokens() >= p.min_tokens;
  if (min_reached && !p.ignore_eos &&
      std::find(eos_token_ids_.begin(), eos_token_ids_.end(), token) != eos_token_ids_.end()) {
    r->status = RequestStatus::kFinishedStopped;
    return true;
  }
  if (min_reached && std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), token) != p.stop_token_ids.end()) {
    r->status = RequestStatus::kFinishedStopped;
    r->stop_reason = token;
    return true;
  }
  if (r->num_output_tokens() >= p.max_tokens || r->num_tokens() >= config_.max_model_len) {
    r->status = RequestStatus::kFinishedLength;
    return true;
  }
  return false;
}

std::vector<StepResult> Scheduler::update_from_output(const SchedulerOutput& out, std::span<const int32_t> sampled) {
  std::vector<StepResult> results;
  size_t next = 0;
  for (const ScheduledRequest& s : out.requests) {
    if (!s.samples) continue;
    TESSERA_CHECK(next < sampled.size());
    const int32_t token = sampled[next++];
    auto it = requests_.find(s.id);
    StepResult res{s.id, -1, RequestStatus::kFinishedAborted};
    // Finished while the step ran (aborted, stopped, or ended by the step before): its
    // token is dropped.
    res.dropped = it == requests_.end() || it->second->status != RequestStatus::kRunning;
    if (!res.dropped) {
      Request* r = it->second.get();
      --r->num_pending_tokens;
      r->append_output_token(token);
      res.token = token;
      if (check_stop(r, token) || constraint_ends(r, token)) {
        res.stop_token = r->status == RequestStatus::kFinishedStopped;
        kv_.free(r->id);
        remove_from_queues(r);
      }
      res.status = r->status;
    }
    results.push_back(res);
  }
  TESSERA_CHECK(next == sampled.size());
  return results;
}

bool Scheduler::finish_request(RequestId id, RequestStatus status) {
  TESSERA_CHECK(is_finished(status));
  auto it = requests_.find(id);
  if (it == requests_.end() || is_finished(it->second->status)) return false;
  Request* r = it->second.get();
  kv_.free(id);
  remove_from_queues(r);
  r->status = status;
  return true;
}

std::unique_ptr<Request> Scheduler::take_finished(RequestId id) {
  auto it = requests_.find(id);
  if (it == requests_.end() || !is_finished(it->second->status)) return nullptr;
  std::unique_ptr<Request> r = std::move(it->second);
  requests_.erase(it);
  return r;
}

const Request* Scheduler::request(RequestId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

}  // namespace tessera
