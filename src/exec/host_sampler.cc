#include "exec/host_sampler.h"

#include <algorithm>
#include <cmath>

#include "sample/sampler.h"
#include "sample/token_sampler.h"

namespace tessera {

namespace {

// Top-k of the log-softmax, plus the given token when it is outside the top k.
PositionLogprobs logprobs_with(const float* logprobs, int64_t n, int64_t k, int32_t token) {
  PositionLogprobs top = top_logprobs(logprobs, n, k);
  if (std::none_of(top.begin(), top.end(), [&](const auto& e) { return e.first == token; })) {
    top.emplace_back(token, logprobs[token]);
  }
  return top;
}

// The chosen token first, then the asked-for tokens (vLLM's logprob_token_ids), each once.
PositionLogprobs chosen_and(const float* logprobs, int32_t token, const std::vector<int32_t>& ids) {
  PositionLogprobs out{{token, logprobs[token]}};
  for (int32_t id : ids) {
    if (std::none_of(out.begin(), out.end(), [&](const auto& e) { return e.first == id; })) {
      out.emplace_back(id, logprobs[id]);
    }
  }
  return out;
}

}  // namespace

HostSampler::HostSampler(int64_t vocab_size, std::vector<int32_t> eos_token_ids)
    : vocab_(vocab_size), eos_token_ids_(std::move(eos_token_ids)), scratch_(static_cast<size_t>(vocab_size)),
      bitmask_(static_cast<size_t>((vocab_size + 31) / 32)) {}

void HostSampler::apply_constraint(TokenConstraint& c, const float* raw) {
  c.fill_allowed(bitmask_.data(), vocab_);
  auto allowed = [&](int64_t t) { return (bitmask_[static_cast<size_t>(t / 32)] >> (t % 32)) & 1u; };
  bool any = false;
  for (int64_t t = 0; t < vocab_; ++t) {
    if (!allowed(t)) {
      scratch_[static_cast<size_t>(t)] = -INFINITY;
    } else {
      any = any || scratch_[static_cast<size_t>(t)] > -INFINITY;
    }
  }
  if (any) return;
  // The other adjustments (min_tokens' EOS mask, bad words, allowed_token_ids) left the grammar
  // nothing: the grammar wins, over the raw logits.
  for (int64_t t = 0; t < vocab_; ++t) scratch_[static_cast<size_t>(t)] = allowed(t) ? raw[t] : -INFINITY;
}

void HostSampler::finish(const Request& r, const LogitsRows& lr, const float* logits, RequestStepOutput* o) {
  auto row = [&](int32_t i) { return logits + static_cast<size_t>(i) * static_cast<size_t>(vocab_); };
  for (int32_t k = 0; k < lr.num_prompt_rows; ++k) {
    log_softmax(row(lr.first_prompt_row + k), vocab_, scratch_.data());
    const int32_t token = r.prompt_token_ids[lr.prompt_position + k];
    o->prompt_logprobs.push_back(logprobs_with(scratch_.data(), vocab_, r.params.prompt_logprobs, token));
    const float lp = scratch_[static_cast<size_t>(token)];
    o->prompt_ranks.push_back(1 + static_cast<int32_t>(std::count_if(scratch_.begin(), scratch_.begin() + vocab_,
                                                                     [lp](float x) { return x > lp; })));
  }
  if (lr.sample_row < 0) return;
  const float* raw = row(lr.sample_row);
  std::copy(raw, raw + vocab_, scratch_.begin());
  process_logits(scratch_.data(), vocab_, r.params, r.prompt_token_ids, r.output_token_ids, eos_token_ids_);
  if (TokenConstraint* c = r.active_constraint()) apply_constraint(*c, raw);
  const int32_t token = sample_token(
      scratch_.data(), vocab_, make_sampling_row(r.params, r.sampling_seed, static_cast<uint64_t>(r.num_output_tokens())));
  o->sampled_token = token;
  if (r.params.logprobs > 0) {
    log_softmax(raw, vocab_, scratch_.data());
    o->logprobs = r.params.logprob_token_ids.empty()
                      ? logprobs_with(scratch_.data(), vocab_, r.params.logprobs, token)
                      : chosen_and(scratch_.data(), token, r.params.logprob_token_ids);
    o->token_logprob = scratch_[static_cast<size_t>(token)];
  }
}

}  // namespace tessera
