// The one check of a request before it is queued: the engine cores run it on every request
// (so the offline LLM gets it), and the server runs it first through AsyncEngine::validate
// to answer 400 before queueing. One function, so that a bad request gets the same error
// text offline and online.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "tessera/sampling_params.h"

namespace tessera {

struct RequestLimits {
  int64_t vocab_size = 0;
  int32_t max_model_len = 0;  // prompt tokens must be fewer: one is left to generate
};

// Sampling parameters (SamplingParams::validate), then the prompt (non-empty, shorter than
// max_model_len, ids in the vocabulary) and every token id the parameters name (logit_bias,
// allowed_token_ids, bad words, which must be resolved to ids first).
Status validate_request(const std::vector<int32_t>& prompt_token_ids, const SamplingParams& params,
                        const RequestLimits& limits);

}  // namespace tessera
