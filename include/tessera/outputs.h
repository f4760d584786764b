// Outputs of a finished request.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessera {

// Top log-probabilities at one generated position: (token id, logprob), best first;
// holds the sampled token too when it is outside the top K.
using PositionLogprobs = std::vector<std::pair<int32_t, float>>;

struct CompletionOutput {
  std::vector<int32_t> token_ids;
  std::vector<PositionLogprobs> logprobs;  // one per generated token when requested
  std::string finish_reason;               // "length" or "stop"
};

struct RequestOutput {
  std::vector<int32_t> prompt_token_ids;
  std::vector<CompletionOutput> outputs;
};

}  // namespace tessera
