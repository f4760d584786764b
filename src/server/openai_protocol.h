// OpenAI (and vLLM) request bodies as typed structs. Parsing checks every field's type and
// range and throws ApiError naming the field, so handlers never see a malformed request.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/http/status.hpp>
#include <nlohmann/json.hpp>

#include "tessera/sampling_params.h"

namespace tessera::server {

// An error answered to the client as {"error": {...}} with this status.
struct ApiError : std::runtime_error {
  ApiError(boost::beast::http::status s, const std::string& message, std::string p = "")
      : std::runtime_error(message), status(s), param(std::move(p)) {}
  boost::beast::http::status status;
  std::string param;
};

// 400 with the field named.
[[noreturn]] void bad_request(const std::string& message, const std::string& param = "");

// Every parse of client JSON goes through parse_client_json: at most max_depth levels
// (recursive walks over the result stay bounded) and a bounded key-lookup cost. Throws a
// 400 ApiError.
nlohmann::ordered_json parse_client_json(std::string_view text, int max_depth);
// A JSON request body: an object, at most kMaxJsonDepth deep, valid UTF-8.
nlohmann::ordered_json parse_json_body(const std::string& body);
constexpr int kMaxJsonDepth = 256;
// tool_calls[].function.arguments: JSON text in a string, parsed for the chat template.
constexpr int kMaxToolArgumentsDepth = 64;

// vLLM's -1 for logprobs, top_logprobs and prompt_logprobs: every token of the vocabulary.
// Requests carry it as this value until the handler knows the vocabulary's size.
constexpr int64_t kAllLogprobs = std::numeric_limits<int32_t>::max();

// Defaults a model supplies for fields a request leaves out (generation_config.json).
struct SamplingDefaults {
  std::optional<float> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k;
};

// A prompt as text or token ids.
struct PromptSpec {
  std::optional<std::string> text;
  std::vector<int32_t> token_ids;
};

struct CompletionRequest {
  std::optional<std::string> model;
  std::vector<PromptSpec> prompts;
  SamplingParams params;
  bool max_tokens_given = false;
  bool echo = false;
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage = false;  // stream_options.continuous_usage_stats: usage in every chunk
  int32_t priority = 0;
  std::optional<std::string> request_id;  // vLLM's extra: the reply's id is "cmpl-" + it
  int64_t logprobs = -1;  // -1: none
  bool add_special_tokens = true;
  std::optional<int64_t> truncate_prompt_tokens;  // keep K prompt tokens (-1: the context)
  bool truncate_right = false;  // vLLM's truncation_side "right": keep the first K, not the last
  int64_t prompt_logprobs = -1;                    // vLLM's extra: top-K per prompt token (-1: none)
  bool return_token_ids = false;  // vLLM's extra: prompt_token_ids and token_ids in each choice
  std::optional<bool> return_tokens_as_token_ids;  // vLLM's extra: logprob tokens as "token_id:N"
  bool use_beam_search = false;  // vLLM's extra: beam search, n the beam width (not with stream)
  double length_penalty = 1.0;   // vLLM's extra: beam search's score is cum_logprob / len^length_penalty
};

struct ChatRequest {
  std::optional<std::string> model;
  nlohmann::ordered_json messages;  // validated: list of {role, content, ...}
  nlohmann::ordered_json tools;     // null or list
  nlohmann::ordered_json tool_choice;
  std::optional<std::string> request_id;  // vLLM's extra: the reply's id is "chatcmpl-" + it
  bool parallel_tool_calls = true;  // false: at most one tool call a reply
  bool include_reasoning = true;    // vLLM's extra: false leaves reasoning_content out
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
  std::optional<std::string> chat_template;  // a template given with the request
  bool add_generation_prompt = true;
  bool continue_final_message = false;
  bool echo = false;  // vLLM's extra: the reply starts with the last message's content when its role is the reply's
  bool add_special_tokens = false;
  SamplingParams params;
  bool max_tokens_given = false;
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage = false;  // stream_options.continuous_usage_stats: usage in every chunk
  int32_t priority = 0;
  bool logprobs = false;
  int64_t top_logprobs = 0;
  std::optional<int64_t> truncate_prompt_tokens;  // keep K prompt tokens (-1: the context)
  bool truncate_right = false;  // vLLM's truncation_side "right": keep the first K, not the last
  int64_t prompt_logprobs = -1;                    // vLLM's extra: top-K per prompt token (-1: none)
  bool return_token_ids = false;  // vLLM's extra: prompt_token_ids (top level) and each choice's token_ids
  std::optional<bool> return_tokens_as_token_ids;  // vLLM's extra: logprob tokens as "token_id:N"
  bool use_beam_search = false;  // vLLM's extra: beam search, n the beam width
  double length_penalty = 1.0;   // vLLM's extra: beam search's score is cum_logprob / len^length_penalty
  // vLLM's kv_transfer_params.prompt_token_ids: the prompt a prefill server rendered, run as
  // it is instead of rendering the messages (ignored with echo, which needs the messages).
  std::optional<std::vector<int32_t>> forwarded_prompt_ids;
};

CompletionRequest parse_completion_request(const nlohmann::ordered_json& body, const SamplingDefaults& defaults);
ChatRequest parse_chat_request(const nlohmann::ordered_json& body, const SamplingDefaults& defaults);

}  // namespace tessera::server
