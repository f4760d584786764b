// What the completion and chat handlers share: driving a request's streams to the end
// (aborting them when the client leaves), ids, usage and logprob formatting.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/async_engine.h"
#include "server/chat_tools.h"
#include "server/http_server.h"
#include "server/openai_protocol.h"
#include "tokenizer/tokenizer.h"

namespace tessera::server {

using Json = nlohmann::ordered_json;

// Serialises like json.dumps in responses: invalid UTF-8 never throws (it becomes U+FFFD).
std::string dump(const Json& j);

// The streams of one HTTP request. Destroying it aborts every stream not finished yet,
// however the handler ends (client gone, write failed, exception).
class StreamSet {
 public:
  explicit StreamSet(AsyncEngine& engine) : engine_(engine) {}
  ~StreamSet();
  StreamSet(const StreamSet&) = delete;
  StreamSet& operator=(const StreamSet&) = delete;

  void add(std::shared_ptr<RequestStream> s) {
    streams_.push_back(std::move(s));
    finished_.push_back(false);
  }
  size_t size() const { return streams_.size(); }

  // Takes each stream's news and hands it to on_batch(stream index, batch) until every
  // stream has finished. Streaming, on_batch appends SSE events to *sse, which is written
  // (and cleared) after each round; unstreamed, sse is null. False when the client left.
  net::awaitable<bool> run(HttpExchange& ex, const std::function<void(size_t, StreamBatch&)>& on_batch,
                           std::string* sse);

 private:
  AsyncEngine& engine_;
  std::vector<std::shared_ptr<RequestStream>> streams_;
  std::vector<bool> finished_;
};

// What an unstreamed reply may take: charged with lower bounds while the request is
// checked and as tokens arrive (so an oversized reply is refused before it is built), then
// with the bytes of the reply as it is assembled. Throws a 400 ApiError past the limit.
class ReplyBudget {
 public:
  explicit ReplyBudget(size_t limit) : limit_(limit) {}
  void charge(size_t bytes);
  // Appends piece to *out, charged.
  void append(std::string* out, std::string_view piece) {
    charge(piece.size());
    out->append(piece);
  }
  size_t used() const { return used_; }

 private:
  size_t limit_;
  size_t used_ = 0;
};

// Fewest bytes a prompt position of prompt_logprobs with k alternatives takes in a reply
// ({"<id>": {"logprob", "rank", "decoded_token"}} for max(k, 1) entries or more).
size_t min_prompt_logprob_bytes(int64_t k);

// Characters (code points) of UTF-8 text: OpenAI's text_offset counts these, not bytes.
size_t utf8_length(std::string_view text);

// "cmpl-<32 hex digits>" and the like.
std::string random_id(const char* prefix);
int64_t unix_time();

// The OpenAI usage object. prompt_tokens_details is null unless cached_tokens is given (the
// prompt tokens the prefix cache served; --enable-prompt-tokens-details).
Json usage_json(int64_t prompt_tokens, int64_t completion_tokens, std::optional<int64_t> cached_tokens);

// The text of one token as logprobs report it (decoded alone, special tokens kept).
std::string token_text(const tokenizer::Tokenizer* tok, int32_t id);

// How logprobs name tokens: their text, or "token_id:N" (--return-tokens-as-token-ids, or the
// request's return_tokens_as_token_ids), which survives tokens that are not text alone.
struct TokenNames {
  const tokenizer::Tokenizer* tok = nullptr;
  bool as_ids = false;
  std::string operator()(int32_t id) const { return as_ids ? "token_id:" + std::to_string(id) : token_text(tok, id); }
};

// vLLM's prompt_logprobs: per prompt position null (the first) or {"<id>": {"logprob",
// "rank", "decoded_token"}} for the top entries and the prompt token (ranks: the engine's
// for the prompt token, order for the others).
Json prompt_logprobs_json(const tokenizer::Tokenizer* tok, const std::vector<int32_t>& ids,
                          const std::vector<PositionLogprobs>& logprobs, const std::vector<int32_t>& ranks);

// vLLM's per-request metrics (--enable-per-request-metrics): time_to_first_token_ms (from
// admission), generation_time_ms (first to last token), queue_time_ms, mean_itl_ms (absent
// with one token) and tokens_per_second (over admission to last token).
Json per_request_metrics_json(const RequestMetrics& m, int64_t num_generation_tokens);

// One completion's accumulated output (unstreamed responses).
struct ChoiceState {
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<float> token_logprobs;
  std::vector<PositionLogprobs> top_logprobs;
  std::string finish_reason;
  Json stop_reason;  // null, a token id or a string
  void append(const CompletionDelta& d);
};

// stop_reason of a finished delta: the stop string, the stop token or null.
Json stop_reason_json(const CompletionDelta& d);

// Completions-API logprobs ({tokens, token_logprobs, top_logprobs, text_offset}) of tokens
// [0, n), k alternatives each; offset0 is the text offset (in characters) of the first token.
Json completion_logprobs(const TokenNames& names, const std::vector<int32_t>& ids,
                         const std::vector<float>& logprobs, const std::vector<PositionLogprobs>& top,
                         int64_t k, size_t offset0);
// Chat-API logprobs entries ({token, logprob, bytes, top_logprobs}) of the tokens.
Json chat_logprobs_content(const TokenNames& names, const std::vector<int32_t>& ids,
                           const std::vector<float>& logprobs, const std::vector<PositionLogprobs>& top, int64_t k);

// Chat (serving_chat.cc). With echo, what the reply repeats before its own text (vLLM's
// rule): the last message's content when its role is the reply's (the assistant's after a
// generation prompt, else the last message's own, as with continue_final_message); text
// parts joined by newlines.
std::string chat_echo_prefix(const ChatRequest& req);
// The role of a chat reply: the assistant's after a generation prompt, else the last
// message's (vLLM's rule).
std::string chat_reply_role(const ChatRequest& req);
// One choice of an unstreamed chat reply, vLLM's fields in vLLM's order.
Json chat_choice_json(size_t index, const std::string& role, ChatReplyMessage message, const std::string& echoed,
                      const ChoiceState& ch, Json logprobs, bool return_token_ids);
// Fewest reply bytes of one generated token's logprobs entry ({"token", "logprob", "bytes",
// "top_logprobs"}), and of each alternative in it.
constexpr size_t kMinChatLogprobBytes = 50;
constexpr size_t kMinChatAlternativeBytes = 36;

}  // namespace tessera::server
