// ModelRunner: runs one SchedulerOutput as one model step on a backend (the CPU, or a CUDA
// device) over the paged KV cache it owns, and hands back what each request got: its sampled
// token and logprobs, never logits. Every backend samples with the counter-based sampler
// (sample/token_sampler.h), so a seed draws the same tokens on each.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/request.h"
#include "sched/scheduler_output.h"
#include "tessera/outputs.h"

namespace tessera {

// What one scheduled request got from a step.
struct RequestStepOutput {
  int32_t sampled_token = -1;  // -1: it does not sample this step (a prefill chunk), or it finished while the step ran
  // When the request asked for logprobs: the top-k log-softmax entries of its raw logits
  // (best first), plus the sampled token's when outside them, and the sampled token's.
  std::optional<PositionLogprobs> logprobs;
  float token_logprob = 0.0f;
  // Prompt logprobs: one entry per prompt position this step scored, in order.
  std::vector<PositionLogprobs> prompt_logprobs;
  std::vector<int32_t> prompt_ranks;  // rank of the actual prompt token at each (1 = best)
};

// Where a scheduled request's rows are in a step's logits (a runner's plan): the last token's
// row (when it samples) and, for prompt logprobs, one per scheduled prompt position that
// predicts a prompt token.
struct LogitsRows {
  int32_t first_prompt_row = -1;  // rows [first, first + num_prompt_rows) predict prompt tokens
  int32_t num_prompt_rows = 0;
  int32_t prompt_position = 0;    // the prompt token predicted by the first prompt row
  int32_t sample_row = -1;        // -1: the request does not sample this step
};

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  using RequestLookup = std::function<const Request*(RequestId)>;
  // A step in two halves, so that the caller can work while a device computes: launch reads
  // what it needs of out and the requests and queues the step (it may return before the step
  // is done); collect waits for it and fills one output per scheduled request, skipping
  // requests that finished meanwhile (lookup gives null, or a finished request). Between the
  // two the caller must not free the step's requests or their blocks.
  virtual void launch(const SchedulerOutput& out, const RequestLookup& lookup) = 0;
  virtual void collect(const RequestLookup& lookup, std::vector<RequestStepOutput>* outputs) = 0;
  void execute(const SchedulerOutput& out, const RequestLookup& lookup, std::vector<RequestStepOutput>* outputs) {
    launch(out, lookup);
    collect(lookup, outputs);
  }

  // Whether launch returns before the step is done (a device runner), so that work between
  // launch and collect overlaps the step; host runners compute in launch.
  virtual bool launches_async() const { return false; }
  // Whether every token the last launched step samples stays where the step ran (no host
  // processing): then the next step may be launched before collect (async scheduling), its
  // input_pending tokens taken from the step before on the device. collect then returns the
  // older step's outputs. At most two steps are in flight.
  virtual bool tokens_stay_on_device() const { return false; }
};

// Frees rows (a host logits buffer of `vocab`-float rows) when it holds more than keep_rows
// rows' worth of storage.
void release_logits_above(std::vector<float>* rows, int64_t vocab, int64_t keep_rows);

}  // namespace tessera
