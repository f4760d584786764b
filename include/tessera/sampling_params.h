// SamplingParams: how one request's tokens are chosen and when it stops (vLLM's names).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

struct SamplingParams {
  int64_t max_tokens = 16;
  float temperature = 1.0f;  // 0 = greedy
  int64_t top_k = -1;        // -1 = all
  float top_p = 1.0f;
  std::optional<uint64_t> seed;
  bool ignore_eos = false;
  std::vector<int64_t> stop_token_ids;
  int64_t logprobs = 0;  // top-K log-probabilities per generated token (0 = none)

  // Empty when valid, else a message naming the bad field.
  std::string validate() const;
};

}  // namespace tessera
