// Outputs of a request (vLLM's RequestOutput / CompletionOutput).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessera {

// Top log-probabilities at one position: (token id, logprob), best first; holds the chosen
// (or prompt) token too when it is outside the top K.
using PositionLogprobs = std::vector<std::pair<int32_t, float>>;

struct CompletionOutput {
  int64_t index = 0;  // which of the request's n completions
  std::string text;
  std::vector<int32_t> token_ids;
  std::optional<double> cumulative_logprob;  // with logprobs requested
  std::vector<PositionLogprobs> logprobs;    // one per generated token when requested
  std::string finish_reason;                 // "stop", "length" or "abort"
  std::optional<int32_t> stop_token;         // the stop token id that ended it
  std::optional<std::string> stop_string;    // or the stop string
};

struct RequestMetrics {
  double arrival_time = 0.0;      // seconds, steady clock
  double scheduled_time = 0.0;    // first admitted to a step (0: unknown)
  double first_token_time = 0.0;
  double finished_time = 0.0;
  double time_to_first_token() const { return first_token_time - arrival_time; }
  // Mean time per output token after the first (0 with a single token).
  double time_per_output_token(int64_t num_output_tokens) const {
    return num_output_tokens > 1 ? (finished_time - first_token_time) / static_cast<double>(num_output_tokens - 1) : 0.0;
  }
};

struct RequestOutput {
  std::string request_id;
  std::optional<std::string> prompt;  // when given as text
  std::vector<int32_t> prompt_token_ids;
  // Per prompt token when requested; the first is empty (nothing predicts it).
  std::vector<PositionLogprobs> prompt_logprobs;
  // With prompt_logprobs: each prompt token's rank in its distribution (1: the most likely;
  // 0 for the first).
  std::vector<int32_t> prompt_logprob_ranks;
  std::vector<CompletionOutput> outputs;
  bool finished = false;
  int32_t num_cached_tokens = 0;  // prompt tokens served by the prefix cache
  RequestMetrics metrics;
  std::string error;  // non-empty: the request was rejected (and outputs is empty)
};

}  // namespace tessera
