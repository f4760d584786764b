// ModelRunner: turns a SchedulerOutput into one ForwardBatch, runs the model over the paged
// KV cache it owns, and returns the logits rows the step asked for.
#pragma once

#include <functional>
#include <vector>

#include "core/request.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "sched/scheduler_output.h"

namespace tessera {

// Which logits rows a scheduled request gets this step: its last token's (when it samples)
// and, for prompt logprobs, one per scheduled prompt position that predicts a prompt token.
struct LogitsRows {
  int32_t first_prompt_row = -1;  // rows [first, first + num_prompt_rows) predict prompt tokens
  int32_t num_prompt_rows = 0;
  int32_t prompt_position = 0;    // the prompt token predicted by the first prompt row
  int32_t sample_row = -1;        // -1: the request does not sample this step
};

class ModelRunner {
 public:
  ModelRunner(Model& model, const KvCacheShape& shape);

  using RequestLookup = std::function<const Request*(RequestId)>;
  // Runs the step. rows[i] says where request out.requests[i]'s logits are in logits().
  void execute(const SchedulerOutput& out, const RequestLookup& lookup, std::vector<LogitsRows>* rows);

  const float* logits(int32_t row) const { return logits_.data() + static_cast<size_t>(row) * vocab_size_; }
  int64_t vocab_size() const { return vocab_size_; }
  KvCache& cache() { return cache_; }

 private:
  Model& model_;
  KvCache cache_;
  int64_t vocab_size_;
  ForwardBatch batch_;
  std::vector<float> logits_;  // [rows, vocab_size]
};

}  // namespace tessera
