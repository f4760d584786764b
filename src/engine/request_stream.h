// RequestStream: what one request (all n completions of one prompt) produced, handed from
// the engine thread to whoever consumes it (an HTTP connection, a test). The engine pushes
// deltas and calls the consumer's notify callback; the consumer takes everything new at once.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/outputs.h"

namespace tessera {

// News of one completion since the last delta. Text can lag the tokens (an unfinished
// character, or text that may still become a stop string, is held back).
struct CompletionDelta {
  int64_t index = 0;                        // which of the request's n completions
  std::string text;                         // new text
  std::vector<int32_t> token_ids;           // new tokens
  std::vector<float> token_logprobs;        // per new token, with logprobs
  std::vector<PositionLogprobs> top_logprobs;  // per new token, with logprobs
  std::string finish_reason;                // set on the completion's last delta
  std::optional<int32_t> stop_token;        // the stop token that finished it
  std::optional<std::string> stop_string;   // or the stop string
};

struct StreamBatch {
  std::vector<CompletionDelta> deltas;
  std::vector<PositionLogprobs> prompt_logprobs;  // positions finished since the last take
  std::vector<int32_t> prompt_ranks;              // their prompt tokens' ranks (0: the first)
  bool finished = false;  // every completion ended; nothing follows
  std::string error;      // the engine rejected the request (finished is set too)
  int32_t num_cached_tokens = 0;
  RequestMetrics metrics;  // arrival, first token and finish times
};

// Adds a stream's news to the request's output (the offline API's whole-request view):
// outputs[d.index] of each delta, prompt logprobs, and the end (metrics, cached tokens,
// or the error). out->outputs holds one entry per completion, indexed already.
void append_to_output(StreamBatch&& batch, RequestOutput* out);

class RequestStream {
 public:
  RequestStream(uint64_t id, std::function<void()> notify) : id_(id), notify_(std::move(notify)) {}

  uint64_t id() const { return id_; }

  // Consumer side: everything new since the last call (finished stays set once set).
  StreamBatch take() {
    std::lock_guard lock(mu_);
    StreamBatch out = std::move(pending_);
    pending_ = StreamBatch();
    pending_.finished = out.finished;
    pending_.error = out.error;
    pending_.num_cached_tokens = out.num_cached_tokens;
    pending_.metrics = out.metrics;
    return out;
  }

  // Engine side. Changes are made under update(); notify() wakes the consumer once per step.
  template <typename F>
  void update(F&& f) {
    std::lock_guard lock(mu_);
    f(pending_);
  }
  void notify() {
    if (notify_) notify_();
  }

 private:
  const uint64_t id_;
  std::function<void()> notify_;
  std::mutex mu_;
  StreamBatch pending_;
};

}  // namespace tessera
