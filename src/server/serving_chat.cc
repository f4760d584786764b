// POST /v1/chat/completions: the messages go through the chat template, the prompt text is
// tokenized without special tokens (the template writes them), and n completions run.
#include "server/api_server.h"
#include "server/serving_common.h"

namespace tessera::server {

std::string chat_echo_prefix(const ChatRequest& req) {
  if (!req.echo || !req.messages.is_array() || req.messages.empty()) return "";
  const auto& last = req.messages.back();
  const std::string last_role = last.value("role", "");
  if (chat_reply_role(req) != last_role) return "";
  const auto content = last.find("content");
  if (content == last.end()) return "";
  if (content->is_string()) return content->get<std::string>();
  std::string text;
  if (content->is_array()) {
    for (const auto& part : *content) {
      if (!part.is_object() || !part.contains("text") || !part["text"].is_string()) continue;
      if (!text.empty()) text += '\n';
      text += part["text"].get<std::string>();
    }
  }
  return text;
}

PreparedChat ApiServer::render_chat_request(ChatRequest request) const {
  PreparedChat p;
  p.req = std::move(request);
  ChatRequest& req = p.req;
  // vLLM's --enable-force-include-usage: usage in every chunk and at the end, asked or not.
  if (config_.enable_force_include_usage) req.include_usage = req.continuous_usage = true;
  check_request(req.model, req.priority, 1, req.params.n);
  resolve_all_logprobs(&req.top_logprobs, &req.prompt_logprobs, &req.params);
  check_logprobs(req.logprobs ? req.top_logprobs : -1, req.prompt_logprobs);
  if (req.use_beam_search) {  // vLLM's beam search reports no prompt logprobs
    req.prompt_logprobs = -1;
    req.params.prompt_logprobs = -1;
  }
  p.tool_plan = plan_chat_tools(config_.tools, req, &req.params);
  if (!req.forwarded_prompt_ids) {
    p.prompt = render_chat(req.messages, req.tools, req.chat_template_kwargs, req.add_generation_prompt,
                           req.continue_final_message, req.chat_template);
  }
  return p;
}

void ApiServer::tokenize_chat_request(PreparedChat* p) const {
  const ChatRequest& req = p->req;
  p->prompt_ids = req.forwarded_prompt_ids ? *req.forwarded_prompt_ids
                                           : encode(p->prompt, req.add_special_tokens, "messages");
  truncate_prompt(&p->prompt_ids, req.truncate_prompt_tokens, req.truncate_right);
  p->params = req.params;
  // With a reasoning parser, a constraint (structured outputs, a required or named tool call)
  // starts after the reasoning, unless the prompt already closed it.
  if (p->params.structured_outputs && !config_.tools.reasoning_parser.empty()) {
    const auto reasoning = make_reasoning_parser(config_.tools.reasoning_parser, p->prompt);
    if (reasoning != nullptr && !reasoning->reasoning_ended()) {
      p->params.structured_outputs->start_after = encode(reasoning->end_marker(), false, "messages");
    }
  }
  if (!req.use_beam_search) resolve_bad_words(&p->params);
  if (!req.max_tokens_given) p->params.max_tokens = engine_.max_model_len();  // up to the context
  fit_max_tokens(p->prompt_ids.size(), req.max_tokens_given, &p->params);
  if (req.use_beam_search) {
    p->beams.push_back(beam_search_request(p->prompt_ids, p->params, req.length_penalty, req.priority));
  } else if (Status s = engine_.validate(p->prompt_ids, p->params); !s.ok()) {
    bad_request(s.message());
  }
  if (req.prompt_logprobs >= 0) {
    p->fixed_reply_bytes = (p->prompt_ids.size() - 1) * min_prompt_logprob_bytes(req.prompt_logprobs);
    ReplyBudget(config_.max_response_bytes).charge(p->fixed_reply_bytes);
  }
}

std::string chat_reply_role(const ChatRequest& req) {
  if (req.add_generation_prompt || !req.messages.is_array() || req.messages.empty()) return "assistant";
  return req.messages.back().value("role", std::string("assistant"));
}

Json chat_choice_json(size_t index, const std::string& role, ChatReplyMessage m, const std::string& echoed,
                      const ChoiceState& ch, Json logprobs, bool return_token_ids) {
  // With echo the content is a string (the echoed text first), as vLLM's.
  Json content = m.content || !echoed.empty() ? Json(echoed + m.content.value_or("")) : Json();
  // vLLM's shape: tool_calls only when there are some, reasoning always (null without).
  Json message = {{"role", role}, {"content", std::move(content)}};
  if (!m.tool_calls.empty()) message["tool_calls"] = std::move(m.tool_calls);
  message["reasoning"] = m.reasoning ? Json(*m.reasoning) : Json();
  const std::string finish = m.auto_tools_called ? std::string("tool_calls") : ch.finish_reason;
  return Json{{"index", index},
              {"message", std::move(message)},
              {"logprobs", std::move(logprobs)},
              {"finish_reason", finish.empty() ? Json() : Json(finish)},
              {"stop_reason", ch.stop_reason},
              {"token_ids", return_token_ids ? Json(ch.token_ids) : Json()}};
}

net::awaitable<void> ApiServer::chat_completions(HttpExchange& ex) {
  // Parsing, rendering and tokenizing (seconds for a long conversation) run on a worker.
  // Two steps: a small body can render a large prompt, whose tokenizing then runs with the large work.
  const std::string& body = ex.request().body();
  PreparedChat prep = co_await lane(body.size()).run([&] {
    return render_chat_request(parse_chat_request(parse_json_body(body), config_.sampling_defaults));
  });
  co_await lane(prep.prompt.size()).run([&] { tokenize_chat_request(&prep); });
  const ChatRequest& req = prep.req;
  const std::vector<int32_t>& prompt_ids = prep.prompt_ids;
  const SamplingParams& params = prep.params;
  check_capacity(static_cast<size_t>(params.n));

  StreamSet streams(engine_);
  if (!req.use_beam_search) {
    streams.add(engine_.add_request(GenerateRequest{prompt_ids, params, req.priority, ex.waker()}));
  }
  const std::string id = req.request_id ? "chatcmpl-" + *req.request_id : random_id("chatcmpl-");
  const int64_t created = unix_time();
  const std::string& model = config_.served_model_name;
  const int64_t n = params.n;
  const std::string echoed = chat_echo_prefix(req);
  const TokenNames names{tok_, req.return_tokens_as_token_ids.value_or(config_.return_tokens_as_token_ids)};
  // Alternatives per token: top_logprobs, or every candidate the engine gave for
  // logprob_token_ids (the chosen token and those asked for).
  const int64_t top_k = params.logprob_token_ids.empty() ? req.top_logprobs : kAllLogprobs;
  const int64_t prompt_tokens = static_cast<int64_t>(prompt_ids.size());
  int64_t completion_tokens = 0;
  std::string error;
  int64_t cached = 0;  // prompt tokens the prefix cache served (known once the request finishes)
  RequestMetrics timings;  // --enable-per-request-metrics, known once the request finishes
  auto metrics_json = [&] {
    return config_.enable_per_request_metrics ? per_request_metrics_json(timings, completion_tokens) : Json();
  };
  auto usage = [&] {
    return usage_json(prompt_tokens, completion_tokens,
                      config_.enable_prompt_tokens_details ? std::optional<int64_t>(cached) : std::nullopt);
  };

  if (!req.stream) {
    std::vector<ChoiceState> choices(static_cast<size_t>(n));
    std::vector<PositionLogprobs> prompt_logprobs;
    std::vector<int32_t> prompt_ranks;
    // Refuses a reply that outgrows the limit as its tokens arrive, before it is built.
    ReplyBudget estimate(config_.max_response_bytes);
    estimate.charge(prep.fixed_reply_bytes);
    const size_t per_token =
        req.logprobs ? kMinChatLogprobBytes + kMinChatAlternativeBytes * static_cast<size_t>(req.top_logprobs) : 0;
    auto on_batch = [&](size_t, StreamBatch& b) {
      if (!b.error.empty()) error = b.error;
      if (b.finished) timings = b.metrics;
      cached = std::max<int64_t>(cached, b.num_cached_tokens);
      for (auto& lp : b.prompt_logprobs) prompt_logprobs.push_back(std::move(lp));
      prompt_ranks.insert(prompt_ranks.end(), b.prompt_ranks.begin(), b.prompt_ranks.end());
      for (const CompletionDelta& d : b.deltas) {
        choices[d.index].append(d);
        estimate.charge(d.text.size() + d.token_ids.size() * per_token);
      }
    };
    const bool done = req.use_beam_search ? co_await run_beam_search(ex, prep.beams, on_batch, nullptr)
                                          : co_await streams.run(ex, on_batch, nullptr);
    if (!done) {
      ex.abandon();
      co_return;
    }
    if (!error.empty()) bad_request(error);
    for (const ChoiceState& ch : choices) completion_tokens += static_cast<int64_t>(ch.token_ids.size());
    // Assembled on a worker, piece by piece.
    std::string reply = co_await lane(estimate.used()).run([&] {
      ReplyBudget budget(config_.max_response_bytes);
      std::string out = dump(Json{{"id", id}, {"object", "chat.completion"}, {"created", created}, {"model", model}});
      out.pop_back();  // the closing brace: the choices follow
      budget.append(&out, ",\"choices\":[");
      for (size_t c = 0; c < choices.size(); ++c) {
        ChoiceState& ch = choices[c];
        Json logprobs = nullptr;
        if (req.logprobs) {
          logprobs = Json{{"content", chat_logprobs_content(names, ch.token_ids, ch.token_logprobs, ch.top_logprobs,
                                                            top_k)}};
        }
        if (c > 0) budget.append(&out, ",");
        ChatReplyParser parser(config_.tools, prep.tool_plan, req, prep.prompt);
        const Json choice = chat_choice_json(c, chat_reply_role(req), parser.whole(ch.text), echoed, ch,
                                             std::move(logprobs), req.return_token_ids);
        budget.append(&out, dump(choice));
      }
      // vLLM's fields in vLLM's order, those not asked for as null.
      budget.append(&out, "],\"service_tier\":null,\"system_fingerprint\":null,\"usage\":");
      budget.append(&out, dump(usage()));
      budget.append(&out, ",\"prompt_logprobs\":");
      budget.append(&out, req.prompt_logprobs >= 0
                              ? dump(prompt_logprobs_json(tok_, prompt_ids, prompt_logprobs, prompt_ranks))
                              : std::string("null"));
      budget.append(&out, ",\"prompt_token_ids\":");
      budget.append(&out, req.return_token_ids ? dump(Json(prompt_ids)) : std::string("null"));
      budget.append(&out, ",\"kv_transfer_params\":null,\"metrics\":");
      budget.append(&out, dump(metrics_json()));
      out += '}';
      return out;
    });
    co_await ex.respond(http::status::ok, "application/json", std::move(reply));
    co_return;
  }

  if (!co_await ex.start_stream("text/event-stream")) co_return;
  std::string out;
  bool sent_prompt_ids = false;  // return_token_ids: on the first chunk
  auto event = [&](Json choices, Json usage = Json(), Json metrics = Json()) {
    Json chunk = {{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", model},
                  {"choices", std::move(choices)}};
    if (req.return_token_ids && !sent_prompt_ids) {
      chunk["prompt_token_ids"] = prompt_ids;
      sent_prompt_ids = true;
    }
    if (!usage.is_null()) chunk["usage"] = std::move(usage);
    if (!metrics.is_null()) chunk["metrics"] = std::move(metrics);
    out += "data: ";
    out += dump(chunk);
    out += "\n\n";
  };
  // stream_options.continuous_usage_stats: a choice's chunk carries the prompt and its tokens so far.
  std::vector<int64_t> choice_tokens(static_cast<size_t>(n), 0);
  auto running_usage = [&](int64_t c) {
    return req.continuous_usage ? usage_json(prompt_tokens, choice_tokens[static_cast<size_t>(c)], std::nullopt)
                                : Json();
  };
  // Every choice opens with the assistant role.
  for (int64_t c = 0; c < n; ++c) {
    event(Json::array({Json{{"index", c},
                            {"delta", Json{{"role", chat_reply_role(req)}, {"content", ""}}},
                            {"logprobs", nullptr},
                            {"finish_reason", nullptr}}}),
          running_usage(c));
  }
  if (!echoed.empty()) {  // the echoed content, before any generated text
    for (int64_t c = 0; c < n; ++c) {
      event(Json::array({Json{{"index", c}, {"delta", Json{{"content", echoed}}}, {"logprobs", nullptr},
                              {"finish_reason", nullptr}}}),
            running_usage(c));
    }
  }
  // Each choice's text through the reasoning and tool parsers: its deltas' fields.
  std::vector<std::unique_ptr<ChatReplyParser>> parsers;
  for (int64_t c = 0; c < n; ++c) {
    parsers.push_back(std::make_unique<ChatReplyParser>(config_.tools, prep.tool_plan, req, prep.prompt));
  }
  auto on_batch = [&](size_t, StreamBatch& b) {
    if (!b.error.empty()) {
      out += "data: " + error_body(http::status::bad_request, b.error) + "\n\n";
      return;
    }
    if (b.finished) timings = b.metrics;
    cached = std::max<int64_t>(cached, b.num_cached_tokens);
    for (const CompletionDelta& d : b.deltas) {
      completion_tokens += static_cast<int64_t>(d.token_ids.size());
      choice_tokens[static_cast<size_t>(d.index)] += static_cast<int64_t>(d.token_ids.size());
      const bool last = !d.finish_reason.empty();
      const bool tokens_wanted = (req.logprobs || req.return_token_ids) && !d.token_ids.empty();
      ChatReplyParser& parser = *parsers[d.index];
      std::vector<Json> parts = parser.feed(d.text);
      if (last) {
        for (Json& p : parser.finish()) parts.push_back(std::move(p));
      }
      if (parts.empty()) {
        if (!last && !tokens_wanted) continue;
        parts.push_back(last ? Json::object() : Json{{"content", ""}});
      }
      // The step's logprobs and token ids ride on its first chunk, the finish on its last.
      for (size_t i = 0; i < parts.size(); ++i) {
        const bool first = i == 0, final = last && i + 1 == parts.size();
        Json logprobs = nullptr;
        if (first && req.logprobs && !d.token_ids.empty()) {
          logprobs = Json{{"content", chat_logprobs_content(names, d.token_ids, d.token_logprobs, d.top_logprobs,
                                                            top_k)}};
        }
        const std::string finish = parser.auto_tools_called() ? std::string("tool_calls") : d.finish_reason;
        Json choice = {{"index", d.index},
                       {"delta", std::move(parts[i])},
                       {"logprobs", std::move(logprobs)},
                       {"finish_reason", final ? Json(finish) : Json()}};
        if (final) choice["stop_reason"] = stop_reason_json(d);
        if (req.return_token_ids) choice["token_ids"] = first ? d.token_ids : std::vector<int32_t>{};
        event(Json::array({std::move(choice)}), running_usage(d.index));
      }
    }
  };
  // Beam search streams as vLLM's does: the roles first, then each choice's whole text in
  // one chunk with its finish_reason once the search ends.
  const bool done = req.use_beam_search ? co_await run_beam_search(ex, prep.beams, on_batch, &out)
                                        : co_await streams.run(ex, on_batch, &out);
  if (!done) {
    ex.abandon();
    co_return;
  }
  if (req.include_usage) event(Json::array(), usage(), metrics_json());  // timings in the usage chunk only
  out += "data: [DONE]\n\n";
  if (co_await ex.write(out)) co_await ex.end_stream();
}

}  // namespace tessera::server
