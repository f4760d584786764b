#include "server/request_fields.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "server/openai_protocol.h"

namespace tessera::server {
namespace {

using Json = nlohmann::ordered_json;

// Read by both routes (src/server/openai_protocol.cc).
constexpr std::string_view kShared[] = {
    "model", "n", "temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty",
    "repetition_penalty", "seed", "stop", "stop_token_ids", "logit_bias", "min_tokens", "ignore_eos",
    "skip_special_tokens", "include_stop_str_in_output", "allowed_token_ids", "bad_words", "max_tokens",
    "logprobs", "stream", "stream_options", "priority", "add_special_tokens", "return_token_ids",
    "return_tokens_as_token_ids", "truncate_prompt_tokens", "truncation_side", "prompt_logprobs",
    "use_beam_search", "length_penalty", "logprob_token_ids", "echo", "response_format", "structured_outputs",
    "guided_json", "guided_regex", "guided_choice", "guided_grammar", "guided_decoding_backend",
    "guided_whitespace_pattern", "request_id",
    // Annotations, as OpenAI's: who asks (user), labels (metadata), the tier wished for.
    "user", "metadata", "service_tier",
    // vLLM's: with the fast tokenizers every served model has, special tokens decode as they
    // are written, spaces or not (vLLM's fast path ignores it too).
    "spaces_between_special_tokens"};
constexpr std::string_view kCompletionOnly[] = {"prompt", "prompt_embeds", "best_of", "suffix"};
constexpr std::string_view kChatOnly[] = {
    "messages", "max_completion_tokens", "top_logprobs", "tools", "tool_choice", "parallel_tool_calls",
    "include_reasoning", "reasoning_effort", "chat_template", "chat_template_kwargs", "add_generation_prompt",
    "continue_final_message", "documents", "kv_transfer_params"};


// Known fields of features not built: refused unless they hold their "off" value.
struct Refused {
  std::string_view name;
  std::string_view feature;
  bool (*off)(const Json&);
};

bool empty_value(const Json& v) { return (v.is_array() || v.is_object() || v.is_string()) && v.empty(); }
bool is_false(const Json& v) { return v.is_boolean() && !v.get<bool>(); }
bool text_only(const Json& v) { return v.is_array() && v.size() == 1 && v[0] == "text"; }

constexpr Refused kRefused[] = {
    {"cache_salt", "prefix cache salts", empty_value},
    {"logits_processors", "custom logits processors", empty_value},
    {"vllm_xargs", "custom logits processors' arguments", empty_value},
    {"mm_processor_kwargs", "multimodal inputs", empty_value},
    {"modalities", "outputs other than text", text_only},
    {"audio", "audio outputs", empty_value},
    {"prediction", "predicted outputs", empty_value},
    {"web_search_options", "web search", empty_value},
    {"functions", "the deprecated functions API (use tools)", empty_value},
    {"function_call", "the deprecated functions API (use tool_choice)", empty_value},
    {"store", "stored completions", is_false},
    {"verbosity", "the verbosity setting", empty_value},
    {"kv_transfer_params", "disaggregated prefill in completions", empty_value},  // chat reads it
};

bool in(std::string_view name, auto const& list) { return std::find(std::begin(list), std::end(list), name) != std::end(list); }

}  // namespace

void check_request_fields(const Json& body, RequestRoute route) {
  if (!body.is_object()) return;
  for (const auto& [key, value] : body.items()) {
    if (value.is_null() || in(key, kShared)) continue;
    if (route == RequestRoute::kCompletion ? in(key, kCompletionOnly) : in(key, kChatOnly)) continue;
    const auto refused = std::find_if(std::begin(kRefused), std::end(kRefused), [&](const Refused& r) { return r.name == key; });
    if (refused != std::end(kRefused)) {
      if (refused->off(value)) continue;
      bad_request(key + " is not supported: Tessera does not run " + std::string(refused->feature) + " yet", key);
    }
    const bool other_route = route == RequestRoute::kCompletion ? in(key, kChatOnly) : in(key, kCompletionOnly);
    bad_request("Unrecognized request argument supplied: " + key +
                    (other_route ? std::string(route == RequestRoute::kCompletion ? " (a chat completions field)"
                                                                                  : " (a completions field)")
                                 : std::string()),
                key);
  }
}

}  // namespace tessera::server
