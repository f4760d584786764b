// CompletionTracker: one completion's output on the engine thread: incremental
// detokenization, stop strings, and which text is safe to stream. Text that could still turn
// out to be the start of a stop string (the last max-stop-length − 1 bytes) is held back, so
// a streamed completion never shows text that its stop string later removes.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>

#include "core/request.h"
#include "engine/engine_core.h"
#include "engine/request_stream.h"
#include "engine/stop_strings.h"
#include "tokenizer/incremental_detokenizer.h"

namespace tessera {

class CompletionTracker {
 public:
  // tok may be null (token ids only, no text).
  CompletionTracker(const tokenizer::Tokenizer* tok, const SamplingParams& params,
                    std::span<const int32_t> prompt_ids, int64_t index);

  // Adds one step's output (a token and its logprobs) to d. True when a stop string now
  // ends the completion (the caller finishes the request).
  bool add(const EngineStepOutput& o, CompletionDelta* d);
  // The completion ended: d gets the held-back text, the finish reason and the stop token.
  void finish(RequestStatus status, std::optional<int32_t> stop_token, CompletionDelta* d);

  int64_t index() const { return index_; }
  size_t num_tokens() const { return num_tokens_; }

 private:
  // Moves text_[sent_, end) into d.
  void emit_until(size_t end, CompletionDelta* d);

  int64_t index_;
  std::unique_ptr<tokenizer::IncrementalDetokenizer> detok_;
  StopStringMatcher stops_;
  size_t hold_back_ = 0;  // bytes a stop string could still claim
  bool include_stop_ = false;  // include_stop_str_in_output: the stopping token's text too
  std::string text_;      // all text so far
  size_t sent_ = 0;       // text_[0, sent_) is emitted
  size_t num_tokens_ = 0;
  bool finished_ = false;
};

}  // namespace tessera
