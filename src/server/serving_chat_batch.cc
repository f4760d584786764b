// POST /v1/chat/completions/batch (vLLM's): the body of a chat request whose `messages` is a
// list of conversations. Each runs as its own chat request with the other fields; the reply is
// one chat completion whose choice i answers conversation i. Not streamed, and without tools,
// beam search or n > 1, as vLLM's.
#include "server/api_server.h"
#include "server/serving_common.h"

namespace tessera::server {

namespace {

// The conversations of a batch body, each checked as the chat route checks its messages: one
// chat request per conversation, with the body's other fields (vLLM's texts for what a batch
// refuses).
std::vector<ChatRequest> parse_batch_chat_request(const Json& body, const SamplingDefaults& defaults) {
  const auto messages = body.find("messages");
  if (messages == body.end() || !messages->is_array() || messages->empty()) {
    bad_request("messages must be a non-empty list of conversations", "messages");
  }
  std::vector<ChatRequest> requests;
  requests.reserve(messages->size());
  Json single = body;
  for (const Json& conversation : *messages) {
    if (!conversation.is_array() || conversation.empty()) {
      bad_request("each conversation in messages must be a non-empty list of messages", "messages");
    }
    single["messages"] = conversation;
    requests.push_back(parse_chat_request(single, defaults));
  }
  const ChatRequest& r = requests.front();  // the fields are the same in each
  if (r.stream) bad_request("Streaming is not supported for batch chat completions.", "stream");
  if (!r.tools.is_null()) bad_request("Tool use is not supported for batch chat completions.", "tools");
  if (r.use_beam_search) bad_request("Beam search is not supported for batch chat completions.", "use_beam_search");
  if (r.params.n != 1) bad_request("n must be 1 for batch chat completions.", "n");
  if (r.forwarded_prompt_ids) {
    bad_request("kv_transfer_params.prompt_token_ids is not supported for batch chat completions.",
                "kv_transfer_params.prompt_token_ids");
  }
  return requests;
}

}  // namespace

net::awaitable<void> ApiServer::chat_completions_batch(HttpExchange& ex) {
  const std::string& body = ex.request().body();
  std::vector<PreparedChat> preps = co_await lane(body.size()).run([&] {
    std::vector<PreparedChat> out;
    for (ChatRequest& req : parse_batch_chat_request(parse_json_body(body), config_.sampling_defaults)) {
      out.push_back(render_chat_request(std::move(req)));
    }
    check_request(out.front().req.model, out.front().req.priority, out.size(), 1);
    return out;
  });
  size_t rendered_bytes = 0;
  for (const PreparedChat& p : preps) rendered_bytes += p.prompt.size();
  co_await lane(rendered_bytes).run([&] {
    ReplyBudget budget(config_.max_response_bytes);
    for (PreparedChat& p : preps) {
      tokenize_chat_request(&p);
      budget.charge(p.fixed_reply_bytes);
    }
  });
  check_capacity(preps.size());

  StreamSet streams(engine_);
  const std::function<void()> wake = ex.waker();
  for (const PreparedChat& p : preps) {
    streams.add(engine_.add_request(GenerateRequest{p.prompt_ids, p.params, p.req.priority, wake}));
  }
  const ChatRequest& first = preps.front().req;  // the fields every conversation shares
  std::vector<ChoiceState> choices(preps.size());
  std::string error;
  ReplyBudget estimate(config_.max_response_bytes);
  const size_t per_token =
      first.logprobs ? kMinChatLogprobBytes + kMinChatAlternativeBytes * static_cast<size_t>(first.top_logprobs) : 0;
  auto on_batch = [&](size_t i, StreamBatch& b) {
    if (!b.error.empty()) error = b.error;
    for (const CompletionDelta& d : b.deltas) {
      choices[i].append(d);
      estimate.charge(d.text.size() + d.token_ids.size() * per_token);
    }
  };
  if (!co_await streams.run(ex, on_batch, nullptr)) {
    ex.abandon();
    co_return;
  }
  if (!error.empty()) bad_request(error);
  const std::string id = random_id("chatcmpl-");
  const int64_t created = unix_time();
  std::string reply = co_await lane(estimate.used()).run([&] {
    ReplyBudget budget(config_.max_response_bytes);
    const TokenNames names{tok_, first.return_tokens_as_token_ids.value_or(config_.return_tokens_as_token_ids)};
    const int64_t top_k = first.params.logprob_token_ids.empty() ? first.top_logprobs : kAllLogprobs;
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
    std::string out = dump(Json{{"id", id}, {"object", "chat.completion"}, {"created", created},
                                {"model", config_.served_model_name}});
    out.pop_back();  // the closing brace: the choices follow
    budget.append(&out, ",\"choices\":[");
    for (size_t i = 0; i < choices.size(); ++i) {
      const ChatRequest& req = preps[i].req;
      ChoiceState& ch = choices[i];
      prompt_tokens += static_cast<int64_t>(preps[i].prompt_ids.size());
      completion_tokens += static_cast<int64_t>(ch.token_ids.size());
      Json logprobs = nullptr;
      if (req.logprobs) {
        logprobs = Json{{"content", chat_logprobs_content(names, ch.token_ids, ch.token_logprobs, ch.top_logprobs, top_k)}};
      }
      if (i > 0) budget.append(&out, ",");
      ChatReplyParser parser(config_.tools, preps[i].tool_plan, req, preps[i].prompt);
      budget.append(&out, dump(chat_choice_json(i, chat_reply_role(req), parser.whole(ch.text), chat_echo_prefix(req),
                                                ch, std::move(logprobs), req.return_token_ids)));
    }
    budget.append(&out, "],\"service_tier\":null,\"system_fingerprint\":null,\"usage\":");
    budget.append(&out, dump(usage_json(prompt_tokens, completion_tokens, std::nullopt)));
    budget.append(&out, ",\"prompt_logprobs\":null,\"prompt_token_ids\":null,\"kv_transfer_params\":null,\"metrics\":null}");
    return out;
  });
  co_await ex.respond(http::status::ok, "application/json", std::move(reply));
}

}  // namespace tessera::server
