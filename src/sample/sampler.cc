#include "sample/sampler.h"

#include "sample/logit_adjustments.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>
#include <vector>

namespace tessera {

std::string SamplingParams::validate() const {
  if (max_tokens < 1) return "max_tokens must be at least 1, got " + std::to_string(max_tokens);
  if (max_tokens > (int64_t{1} << 30)) return "max_tokens is too large: " + std::to_string(max_tokens);
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) return "temperature must be >= 0";
  if (top_k == 0 || top_k < -1) return "top_k must be -1 (disabled) or at least 1";
  if (!(top_p > 0.0f && top_p <= 1.0f)) return "top_p must be in (0, 1]";
  // The upper bound is the vocabulary (validate_request); a server caps it lower (--max-logprobs).
  if (logprobs < 0) return "logprobs must be at least 0, got " + std::to_string(logprobs);
  if (prompt_logprobs < -1) return "prompt_logprobs must be at least 0 (or -1: none), got " + std::to_string(prompt_logprobs);
  if (logprob_token_ids.size() > kMaxLogprobTokenIds) {
    return "Requested logprob_token_ids of length " + std::to_string(logprob_token_ids.size()) +
           ", which is greater than max allowed: " + std::to_string(kMaxLogprobTokenIds);
  }
  if (n < 1 || n > 128) return "n must be in [1, 128], got " + std::to_string(n);
  // Greedy completions would all be the same (vLLM's rule and text; its threshold, 1e-5).
  if (n > 1 && temperature < 1e-5f) return "n must be 1 when using greedy sampling, got " + std::to_string(n) + ".";
  if (min_tokens < 0 || min_tokens > max_tokens) return "min_tokens must be in [0, max_tokens]";
  if (!(min_p >= 0.0f && min_p <= 1.0f)) return "min_p must be in [0, 1]";
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) return "presence_penalty must be in [-2, 2]";
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) return "frequency_penalty must be in [-2, 2]";
  if (!(repetition_penalty > 0.0f && std::isfinite(repetition_penalty))) return "repetition_penalty must be > 0";
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) return "logit_bias token ids must be non-negative";
    if (!(bias >= -100.0f && bias <= 100.0f)) return "logit_bias values must be in [-100, 100]";
  }
  for (int64_t id : stop_token_ids) {
    if (id < 0 || id > INT32_MAX) return "stop_token_ids must be non-negative token ids";
  }
  for (const std::string& s : stop) {
    if (s.empty()) return "stop strings must not be empty";
  }
  for (const std::string& w : bad_words) {
    if (w.find_first_not_of(" \t\n\r") == std::string::npos) return "bad_words must not be empty or blank";
  }
  for (int32_t id : allowed_token_ids) {
    if (id < 0) return "allowed_token_ids must be non-negative token ids";
  }
  for (const auto& ids : bad_words_token_ids) {
    if (ids.empty()) return "bad_words token sequences must not be empty";
    for (int32_t id : ids) {
      if (id < 0) return "bad_words token ids must be non-negative";
    }
  }
  if (structured_outputs) {
    const StructuredOutputsParams& so = *structured_outputs;
    if (so.kinds() != 1) {  // vLLM's text
      return so.kinds() == 0 ? "structured_outputs: one of json, regex, choice, grammar or json_object is required"
                             : "You can only use one kind of structured outputs constraint but multiple are specified";
    }
    if (so.choice && so.choice->empty()) return "structured_outputs.choice must not be empty";
  }
  return "";
}

void log_softmax(const float* logits, int64_t n, float* out) {
  float max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) max = std::max(max, logits[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - max));
  const float lse = max + static_cast<float>(std::log(sum));
  for (int64_t i = 0; i < n; ++i) out[i] = logits[i] - lse;
}

PositionLogprobs top_logprobs(const float* logprobs, int64_t n, int64_t k) {
  k = std::min(k, n);
  std::vector<int32_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  auto better = [&](int32_t a, int32_t b) {
    return logprobs[a] > logprobs[b] || (logprobs[a] == logprobs[b] && a < b);
  };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), better);
  PositionLogprobs top;
  top.reserve(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) top.emplace_back(idx[i], logprobs[idx[i]]);
  return top;
}

int32_t argmax(const float* x, int64_t n) {
  int32_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

void process_logits(float* logits, int64_t n, const SamplingParams& p, std::span<const int32_t> prompt,
                    std::span<const int32_t> output, std::span<const int32_t> eos_token_ids) {
  for (const LogitAdjustment& a : logit_adjustments(p, prompt, output, eos_token_ids, n)) {
    logits[a.token] = adjust_logit(logits[a.token], a);
  }
}

}  // namespace tessera
