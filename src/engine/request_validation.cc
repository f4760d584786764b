#include "engine/request_validation.h"

#include <string>

namespace tessera {
namespace {

bool in_vocab(int64_t id, const RequestLimits& limits) { return id >= 0 && id < limits.vocab_size; }

Status out_of_vocab(const std::string& what, int64_t id, const RequestLimits& limits) {
  return Status::error(what + " token id " + std::to_string(id) + " is out of vocabulary [0, " +
                       std::to_string(limits.vocab_size) + ")");
}

}  // namespace

Status validate_request(const std::vector<int32_t>& prompt, const SamplingParams& params,
                        const RequestLimits& limits) {
  if (std::string err = params.validate(); !err.empty()) return Status::error(err);
  if (prompt.empty()) return Status::error("the prompt must contain at least one token");
  const int64_t n = static_cast<int64_t>(prompt.size());
  if (n >= limits.max_model_len) {
    return Status::error("this model's maximum context length is " + std::to_string(limits.max_model_len) +
                         " tokens, but the prompt has " + std::to_string(n) +
                         " tokens (at least one must be left to generate)");
  }
  for (int32_t id : prompt) {
    if (!in_vocab(id, limits)) return out_of_vocab("prompt", id, limits);
  }
  if (params.logprobs > limits.vocab_size || params.prompt_logprobs > limits.vocab_size) {
    return Status::error("logprobs and prompt_logprobs must be at most the vocabulary's size, " +
                         std::to_string(limits.vocab_size));
  }
  for (const auto& [id, bias] : params.logit_bias) {
    if (!in_vocab(id, limits)) return out_of_vocab("logit_bias", id, limits);
  }
  for (int32_t id : params.allowed_token_ids) {
    if (!in_vocab(id, limits)) return out_of_vocab("allowed_token_ids", id, limits);
  }
  for (int32_t id : params.logprob_token_ids) {
    if (!in_vocab(id, limits)) return out_of_vocab("logprob_token_ids", id, limits);
  }
  if (!params.bad_words.empty()) return Status::error("bad_words must be resolved to token ids first");
  for (const auto& word : params.bad_words_token_ids) {
    for (int32_t id : word) {
      if (!in_vocab(id, limits)) return out_of_vocab("bad_words", id, limits);
    }
  }
  return Status();
}

}  // namespace tessera
