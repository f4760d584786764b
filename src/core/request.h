// Request: one sequence's state as the engine sees it. The scheduler only ever moves
// num_computed_tokens up to num_tokens(); prefill, chunked prefill, decode and prefix hits
// are all that one case.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/ids.h"
#include "core/token_constraint.h"
#include "tessera/sampling_params.h"

namespace tessera {

enum class RequestStatus {
  kWaiting,    // not admitted yet, or preempted (its blocks were freed; it recomputes)
  kRunning,    // holds blocks, scheduled every step until it finishes
  kFinishedStopped,  // EOS, a stop token or a stop string
  kFinishedLength,   // max_tokens or the model's maximum length
  kFinishedAborted,  // the client went away or asked to stop
};

inline bool is_finished(RequestStatus s) { return s >= RequestStatus::kFinishedStopped; }
// vLLM's finish_reason strings ("" while unfinished).
inline const char* finish_reason(RequestStatus s) {
  switch (s) {
    case RequestStatus::kFinishedStopped: return "stop";
    case RequestStatus::kFinishedLength: return "length";
    case RequestStatus::kFinishedAborted: return "abort";
    default: return "";
  }
}

struct Request {
  RequestId id;
  std::vector<int32_t> prompt_token_ids;
  std::vector<int32_t> output_token_ids;
  std::vector<int32_t> all_token_ids;  // prompt then output
  SamplingParams params;
  std::vector<uint64_t> cache_keys;  // extra keys of its block hashes (cache salt, ...)
  int32_t priority = 0;              // lower runs first (vLLM's convention)
  uint64_t arrival_seq = 0;          // admission order among equal priorities
  double arrival_time = 0.0;         // seconds, steady clock
  double first_scheduled_time = 0.0; // when it was first admitted (0: not yet); queue time

  RequestStatus status = RequestStatus::kWaiting;
  int32_t num_computed_tokens = 0;   // tokens whose K/V is in the cache (or scheduled this step)
  // Tokens sampled by launched steps and not appended yet (0 or 1 at scheduling time, 2
  // while a look-ahead step runs behind the one that sampled the first).
  int32_t num_pending_tokens = 0;
  int32_t num_cached_tokens = -1;    // prefix-cache hit at first admission (-1: not admitted yet)
  int32_t num_preemptions = 0;
  std::optional<int32_t> stop_reason;  // the stop token id that finished it, if any
  uint64_t sampling_seed = 0;          // params.seed, or the engine's pick: device sampling keys on it
  // Structured outputs: the grammar's matcher, advanced over every appended token (null: none).
  std::unique_ptr<TokenConstraint> constraint;
  // While not empty, the constraint waits for the output to end with these tokens
  // (structured_outputs.start_after); cleared once it does.
  std::vector<int32_t> constraint_start_after;

  Request(RequestId rid, std::vector<int32_t> prompt, SamplingParams p)
      : id(rid), prompt_token_ids(std::move(prompt)), all_token_ids(prompt_token_ids), params(std::move(p)) {}

  // The grammar the next token follows: none while the constraint waits for its start.
  TokenConstraint* active_constraint() const {
    return constraint_start_after.empty() ? constraint.get() : nullptr;
  }

  int32_t num_tokens() const { return static_cast<int32_t>(all_token_ids.size()); }
  int32_t num_prompt_tokens() const { return static_cast<int32_t>(prompt_token_ids.size()); }
  int32_t num_output_tokens() const { return static_cast<int32_t>(output_token_ids.size()); }
  void append_output_token(int32_t token) {
    output_token_ids.push_back(token);
    all_token_ids.push_back(token);
  }
};

}  // namespace tessera
