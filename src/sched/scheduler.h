// Scheduler: one token budget per step, shared by every request. Running requests go first
// (decodes and unfinished prefill chunks, in admission order), then waiting requests by
// (priority, arrival) while budget, sequence slots and KV blocks last. Out of blocks, the
// lowest-priority, newest running request is preempted: its blocks are freed and it waits
// to recompute (its prefix usually survives in the prefix cache).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "config/engine_config.h"
#include "core/request.h"
#include "kv/kv_cache_manager.h"
#include "sched/scheduler_output.h"

namespace tessera {

// A request's new token from one step, and whether that finished it.
struct StepResult {
  RequestId id;
  int32_t token = -1;  // -1: no token this step (prefill chunk, or aborted)
  RequestStatus status = RequestStatus::kRunning;
  bool dropped = false;  // the request had finished before this step's results came: no output
  bool stop_token = false;  // token is the EOS or stop token that finished the request
};

class Scheduler {
 public:
  // eos_token_ids: tokens that finish a request unless it ignores EOS.
  Scheduler(const SchedulerConfig& config, KvCacheManager& kv, std::vector<int32_t> eos_token_ids);

  const SchedulerConfig& config() const { return config_; }

  // Queues a validated request (prompt non-empty and shorter than max_model_len).
  void add_request(std::unique_ptr<Request> request);

  // Decides the next step; requests' num_computed_tokens advance as scheduled. look_ahead:
  // a step is in flight whose sampled tokens stay on the device; requests that sample in
  // it decode those tokens (ScheduledRequest::input_pending) unless that token ends them
  // for length. Look-ahead never preempts: out of blocks, it stops (look_ahead_stalled).
  SchedulerOutput schedule(bool look_ahead = false);

  // Applies the step's sampled tokens: sampled[i] is the token of the i-th scheduled request
  // with samples == true. Appends them, checks stop conditions, frees finished requests'
  // blocks. Returns one result per sampled request, in order (dropped for a request that
  // finished while the step ran).
  std::vector<StepResult> update_from_output(const SchedulerOutput& out, std::span<const int32_t> sampled);

  // Finishes a request now (abort, or a stop string found by the output processor) and
  // frees its blocks. False when it is unknown or already finished.
  bool finish_request(RequestId id, RequestStatus status);

  // Hands a finished request back to the caller and forgets it.
  std::unique_ptr<Request> take_finished(RequestId id);

  const Request* request(RequestId id) const;
  size_t num_waiting() const { return waiting_.size(); }
  size_t num_running() const { return running_.size(); }
  bool has_unfinished() const { return !waiting_.empty() || !running_.empty(); }
  int64_t num_preemptions() const { return num_preemptions_; }
  KvCacheManager& kv() { return kv_; }

 private:
  void preempt(Request* r);
  void insert_waiting(Request* r);  // keeps waiting_ ordered by (priority, arrival_seq)
  void remove_from_queues(Request* r);
  bool check_stop(Request* r, int32_t token);
  // Advances r's grammar over token; true (r stopped) when nothing valid may follow.
  bool constraint_ends(Request* r, int32_t token);

  SchedulerConfig config_;
  KvCacheManager& kv_;
  std::vector<int32_t> eos_token_ids_;
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  std::deque<Request*> waiting_;  // (priority, arrival_seq) order
  std::vector<Request*> running_;  // admission order
  int64_t num_preemptions_ = 0;
};

}  // namespace tessera
