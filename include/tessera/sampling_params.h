// SamplingParams: how one request's tokens are chosen and when it stops (vLLM's names and
// defaults).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

// Structured outputs (vLLM's StructuredOutputsParams): the output is constrained to one of
// these, exactly one set. The engine compiles it into a grammar over the tokenizer's
// vocabulary and masks every token that cannot continue a valid output; EOS is allowed once
// the output is complete.
struct StructuredOutputsParams {
  std::optional<std::string> json;                 // a JSON Schema (its JSON text)
  std::optional<std::string> regex;                // the whole output matches it
  std::optional<std::vector<std::string>> choice;  // exactly one of these strings
  std::optional<std::string> grammar;              // an EBNF grammar (GBNF style, root rule "root")
  bool json_object = false;                        // any JSON object
  // JSON without free whitespace between tokens (compact, as json.dumps(separators=(",", ":")).
  bool disable_any_whitespace = false;
  // The output is free until it contains these tokens (a reasoning block's end, "</think>"),
  // and follows the constraint after them. Empty: constrained from the first token.
  std::vector<int32_t> start_after;

  // How many of json, regex, choice, grammar and json_object are set.
  int kinds() const {
    return json.has_value() + regex.has_value() + choice.has_value() + grammar.has_value() + json_object;
  }
};

struct SamplingParams {
  int64_t n = 1;               // completions per prompt
  int64_t max_tokens = 16;
  int64_t min_tokens = 0;      // EOS and stop tokens are ignored before this many
  float temperature = 1.0f;    // 0 = greedy
  int64_t top_k = -1;          // -1 = all
  float top_p = 1.0f;
  float min_p = 0.0f;          // drop tokens below min_p * p(best)
  float presence_penalty = 0.0f;   // - penalty once per token present in the output
  float frequency_penalty = 0.0f;  // - penalty per occurrence in the output
  float repetition_penalty = 1.0f; // logits of prompt+output tokens: /p if > 0, *p if < 0
  std::map<int32_t, float> logit_bias;  // added to the logits before anything else
  // Words never generated: a word's last token is masked whenever the output ends with the
  // tokens before it (one-token words: always). The engine tokenizes bad_words into
  // bad_words_token_ids (each word as is and after a space); token sequences may be given
  // directly too.
  std::vector<std::string> bad_words;
  std::vector<std::vector<int32_t>> bad_words_token_ids;
  // When not empty, only these tokens can be generated (every other logit masked).
  std::vector<int32_t> allowed_token_ids;
  std::optional<uint64_t> seed;
  bool ignore_eos = false;
  std::vector<int64_t> stop_token_ids;
  std::vector<std::string> stop;   // stop strings (excluded from the output by default)
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  int64_t logprobs = 0;         // top-K log-probabilities per generated token (0 = none)
  // With logprobs: the chosen token's and these tokens' log-probabilities per generated token,
  // in place of the top K (vLLM's logprob_token_ids; at most kMaxLogprobTokenIds).
  std::vector<int32_t> logprob_token_ids;
  static constexpr size_t kMaxLogprobTokenIds = 128;
  int64_t prompt_logprobs = -1; // top-K per prompt token (-1 = none)
  std::optional<StructuredOutputsParams> structured_outputs;

  // Empty when valid, else a message naming the bad field.
  std::string validate() const;
};

}  // namespace tessera
