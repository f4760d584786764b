// HostSampler: a step's host logits rows -> what a request gets (prompt logprobs, the sampled
// token and its logprobs). The CPU runner samples every row here; the CUDA runner the rows
// the device does not (too many logit adjustments, logprobs of adjusted logits). The draw is
// sample_token's, the device sampler's twin, so where a row is sampled does not change it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/request.h"
#include "exec/model_runner.h"

namespace tessera {

class HostSampler {
 public:
  HostSampler(int64_t vocab_size, std::vector<int32_t> eos_token_ids);

  // Fills o from r's rows lr of logits ([rows, vocab] fp32): the prompt logprobs of its
  // prompt rows and, when lr.sample_row >= 0, the token drawn (after bias, min_tokens masks,
  // penalties and the structured-output grammar's mask) with its logprobs of the raw logits,
  // as vLLM reports them by default.
  void finish(const Request& r, const LogitsRows& lr, const float* logits, RequestStepOutput* o);

 private:
  int64_t vocab_;
  std::vector<int32_t> eos_token_ids_;
  // scratch_ = -inf where the grammar forbids the token (raw: the unprocessed row).
  void apply_constraint(TokenConstraint& c, const float* raw);

  std::vector<float> scratch_;     // [vocab] processed logits / logprobs
  std::vector<uint32_t> bitmask_;  // [(vocab + 31) / 32] the grammar's allowed tokens
};

}  // namespace tessera
