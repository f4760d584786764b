#include "sample/logit_adjustments.h"

#include <algorithm>
#include <map>

namespace tessera {

bool adjustments_read_output(const SamplingParams& p) {
  const bool multi_token_bad_word = std::any_of(p.bad_words_token_ids.begin(), p.bad_words_token_ids.end(),
                                                [](const std::vector<int32_t>& w) { return w.size() > 1; });
  return p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f ||
         multi_token_bad_word;
}

std::vector<LogitAdjustment> logit_adjustments(const SamplingParams& p, std::span<const int32_t> prompt,
                                               std::span<const int32_t> output, std::span<const int32_t> eos_token_ids,
                                               int64_t vocab, int64_t num_pending) {
  std::map<int32_t, LogitAdjustment> by_token;
  auto at = [&](int64_t id) -> LogitAdjustment* {
    if (id < 0 || id >= vocab) return nullptr;
    const auto t = static_cast<int32_t>(id);
    return &by_token.try_emplace(t, LogitAdjustment{t, 0.0f, 1.0f, 0.0f}).first->second;
  };
  for (const auto& [id, bias] : p.logit_bias) {
    if (LogitAdjustment* a = at(id)) a->add += bias;
  }
  if (!p.allowed_token_ids.empty()) {
    // Every token but the allowed ones masked (a dense list: only for requests that ask).
    std::vector<bool> allowed(static_cast<size_t>(vocab), false);
    for (int32_t id : p.allowed_token_ids) {
      if (id >= 0 && id < vocab) allowed[static_cast<size_t>(id)] = true;
    }
    for (int64_t id = 0; id < vocab; ++id) {
      if (!allowed[static_cast<size_t>(id)]) at(id)->add = -INFINITY;
    }
  }
  for (const std::vector<int32_t>& word : p.bad_words_token_ids) {
    // The word's last token, once the output ends with the tokens before it.
    const size_t before = word.size() - 1;
    if (word.empty() || before > output.size()) continue;
    if (!std::equal(word.begin(), word.end() - 1, output.end() - static_cast<std::ptrdiff_t>(before))) continue;
    if (LogitAdjustment* a = at(word.back())) a->add = -INFINITY;
  }
  if (static_cast<int64_t>(output.size()) + num_pending < p.min_tokens) {
    for (int32_t id : eos_token_ids) {
      if (LogitAdjustment* a = at(id)) a->add = -INFINITY;
    }
    for (int64_t id : p.stop_token_ids) {
      if (LogitAdjustment* a = at(id)) a->add = -INFINITY;
    }
  }
  if (!p.allowed_token_ids.empty()) {
    // allowed_token_ids is a hard limit; min_tokens and bad words yield where they would mask
    // every allowed token (else sampling from an all -inf row picks a token outside the set).
    bool any_open = false;
    for (int32_t id : p.allowed_token_ids) {
      if (id < 0 || id >= vocab) continue;
      auto it = by_token.find(id);
      if (it == by_token.end() || it->second.add != -INFINITY) any_open = true;
    }
    if (!any_open) {
      for (int32_t id : p.allowed_token_ids) {
        if (LogitAdjustment* a = at(id)) {
          auto bias = p.logit_bias.find(id);
          a->add = bias == p.logit_bias.end() ? 0.0f : bias->second;
        }
      }
    }
  }
  if (p.repetition_penalty != 1.0f) {
    for (auto span : {prompt, output}) {
      for (int32_t id : span) {
        if (LogitAdjustment* a = at(id)) a->repetition = p.repetition_penalty;
      }
    }
  }
  if (p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f) {
    std::map<int32_t, int64_t> counts;
    for (int32_t id : output) ++counts[id];
    for (const auto& [id, n] : counts) {
      if (LogitAdjustment* a = at(id)) a->subtract = p.frequency_penalty * static_cast<float>(n) + p.presence_penalty;
    }
  }
  std::vector<LogitAdjustment> out;
  out.reserve(by_token.size());
  for (const auto& [id, a] : by_token) out.push_back(a);
  return out;
}

}  // namespace tessera
