// ModelRunner: runs one SchedulerOutput as one model step on a backend (the CPU, or a CUDA
// device) over the paged KV cache it owns, and hands back each request's logits rows, or the
// token it already sampled on the device.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/request.h"
#include "sched/scheduler_output.h"
#include "tessera/outputs.h"

namespace tessera {

// Where a scheduled request's results are after a step: its logits rows (host memory) for
// the last token (when it samples) and, for prompt logprobs, one per scheduled prompt
// position that predicts a prompt token; or the token the runner sampled itself.
struct LogitsRows {
  int32_t first_prompt_row = -1;  // rows [first, first + num_prompt_rows) predict prompt tokens
  int32_t num_prompt_rows = 0;
  int32_t prompt_position = 0;    // the prompt token predicted by the first prompt row
  int32_t sample_row = -1;        // -1: the request does not sample this step, or sampled_token is set
  int32_t sampled_token = -1;     // >= 0: sampled by the runner (device sampling); no logits row
  // With sampled_token, when the request asked for logprobs: the top-k log-softmax entries
  // of its raw logits (best first), plus the sampled token's when outside them.
  std::optional<PositionLogprobs> sampled_logprobs;
  float sampled_logprob = 0.0f;  // the sampled token's raw logprob (with sampled_logprobs)
};

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  using RequestLookup = std::function<const Request*(RequestId)>;
  // Runs the step. rows[i] says where request out.requests[i]'s results are.
  virtual void execute(const SchedulerOutput& out, const RequestLookup& lookup, std::vector<LogitsRows>* rows) = 0;
  // The same step in two halves, so that the caller can work while a device computes:
  // launch reads what it needs of out and the requests and queues the step (it may return
  // before the step is done); collect waits for it and fills rows. Between the two the caller
  // must not free the step's requests or their blocks. Runners on the host do it all in
  // launch.
  virtual void launch(const SchedulerOutput& out, const RequestLookup& lookup) { execute(out, lookup, &launched_); }
  virtual void collect(std::vector<LogitsRows>* rows) {
    *rows = std::move(launched_);
    launched_.clear();
  }

  // Whether launch returns before the step is done (a device runner), so that work between
  // launch and collect overlaps the step; host runners compute in launch.
  virtual bool launches_async() const { return false; }
  // Whether every token the last launched step samples is sampled where the step ran, with
  // no logits row for the host: then the next step may be launched before collect
  // (async scheduling), its input_pending tokens taken from the step before on the device.
  // collect then returns the older step's rows. At most two steps are in flight.
  virtual bool tokens_stay_on_device() const { return false; }
  // Logits row `row` of the last step, [vocab_size] fp32 in host memory.
  virtual const float* logits(int32_t row) const = 0;
  virtual int64_t vocab_size() const = 0;
  // The last step's rows have been read: give back host memory held above what an ordinary
  // step needs (prompt-logprob rows of a long prefill are hundreds of MB), so that one
  // request's peak does not stay with the process.
  virtual void release_step_memory() {}

 private:
  std::vector<LogitsRows> launched_;  // the default launch's results, until collect
};

// Rows of logits a step needs for request r scheduled as s: prompt-logprob rows first, then
// the sampling row; appends the batch token index of each to logits_indices. base: the batch
// index of the request's first scheduled token. Shared by every backend's runner.
void plan_logits_rows(const Request& r, const ScheduledRequest& s, int32_t base, std::vector<int32_t>* logits_indices,
                      LogitsRows* rows);

// Frees rows (a host logits buffer of `vocab`-float rows) when it holds more than keep_rows
// rows' worth of storage.
void release_logits_above(std::vector<float>* rows, int64_t vocab, int64_t keep_rows);

}  // namespace tessera
