// POST /v1/completions: one engine request per prompt (n completions each); choice
// index = prompt index * n + completion index, as OpenAI numbers them.
#include "server/api_server.h"
#include "server/serving_common.h"

namespace tessera::server {

net::awaitable<void> ApiServer::completions(HttpExchange& ex) {
  const Json body = parse_json_body(ex.request().body());
  CompletionRequest req = parse_completion_request(body, config_.sampling_defaults);
  check_model(req.model);
  resolve_bad_words(&req.params);
  const size_t num_prompts = req.prompts.size();
  const int64_t n = req.params.n;
  // Tokenize and check everything before the first request starts.
  std::vector<std::vector<int32_t>> prompt_ids(num_prompts);
  std::vector<SamplingParams> params(num_prompts, req.params);
  std::vector<std::string> prompt_texts(num_prompts);
  for (size_t i = 0; i < num_prompts; ++i) {
    PromptSpec& p = req.prompts[i];
    prompt_ids[i] = p.text ? encode(*p.text, req.add_special_tokens, "prompt") : std::move(p.token_ids);
    const bool truncated = truncate_prompt(&prompt_ids[i], req.truncate_prompt_tokens);
    fit_max_tokens(prompt_ids[i].size(), req.max_tokens_given, &params[i]);
    if (Status s = engine_.validate(prompt_ids[i], params[i]); !s.ok()) bad_request(s.message());
    if (req.echo && p.text && !truncated) prompt_texts[i] = *p.text;
    if (req.echo && (!p.text || truncated) && tok_ != nullptr) {
      auto text = tok_->decode(prompt_ids[i], /*skip_special_tokens=*/false);
      if (text.ok()) prompt_texts[i] = std::move(*text);
    }
  }
  check_capacity(num_prompts);

  StreamSet streams(engine_);
  const std::function<void()> wake = ex.waker();
  for (size_t i = 0; i < num_prompts; ++i) {
    streams.add(engine_.add_request(GenerateRequest{prompt_ids[i], params[i], req.priority, wake}));
  }
  const std::string id = random_id("cmpl-");
  const int64_t created = unix_time();
  const std::string& model = config_.served_model_name;
  const int64_t k = std::max<int64_t>(req.logprobs, 0);
  int64_t prompt_tokens = 0;
  for (const auto& p : prompt_ids) prompt_tokens += static_cast<int64_t>(p.size());
  int64_t completion_tokens = 0;
  std::string error;
  // Prompt tokens each prompt's request got from the prefix cache (known once it finishes).
  std::vector<int64_t> cached(num_prompts, 0);
  auto usage = [&] {
    int64_t total = 0;
    for (int64_t c : cached) total += c;
    return usage_json(prompt_tokens, completion_tokens,
                      config_.enable_prompt_tokens_details ? std::optional<int64_t>(total) : std::nullopt);
  };

  if (!req.stream) {
    std::vector<ChoiceState> choices(num_prompts * static_cast<size_t>(n));
    std::vector<std::vector<PositionLogprobs>> prompt_logprobs(num_prompts);
    std::vector<std::vector<int32_t>> prompt_ranks(num_prompts);
    auto on_batch = [&](size_t i, StreamBatch& b) {
      if (!b.error.empty()) error = b.error;
      cached[i] = std::max<int64_t>(cached[i], b.num_cached_tokens);
      for (auto& lp : b.prompt_logprobs) prompt_logprobs[i].push_back(std::move(lp));
      prompt_ranks[i].insert(prompt_ranks[i].end(), b.prompt_ranks.begin(), b.prompt_ranks.end());
      for (const CompletionDelta& d : b.deltas) choices[i * n + d.index].append(d);
    };
    if (!co_await streams.run(ex, on_batch, nullptr)) {
      ex.abandon();
      co_return;
    }
    if (!error.empty()) bad_request(error);
    Json out_choices = Json::array();
    for (size_t c = 0; c < choices.size(); ++c) {
      ChoiceState& ch = choices[c];
      const size_t i = c / static_cast<size_t>(n);
      completion_tokens += static_cast<int64_t>(ch.token_ids.size());
      Json logprobs = nullptr;
      std::string text = ch.text;
      if (req.echo) text = prompt_texts[i] + text;
      if (req.logprobs >= 0) {
        if (req.echo) {
          // Prompt tokens first; nothing predicts the first, so its logprob is null.
          const auto& pl = prompt_logprobs[i];
          std::vector<int32_t> ids = prompt_ids[i];
          std::vector<float> lps;
          std::vector<PositionLogprobs> tops;
          for (size_t t = 0; t < ids.size(); ++t) {
            const PositionLogprobs* p = t < pl.size() ? &pl[t] : nullptr;
            float lp = 0.0f;
            if (p != nullptr) {
              for (const auto& [tid, v] : *p) {
                if (tid == ids[t]) lp = v;
              }
            }
            lps.push_back(lp);
            tops.push_back(p ? *p : PositionLogprobs{});
          }
          ids.insert(ids.end(), ch.token_ids.begin(), ch.token_ids.end());
          lps.insert(lps.end(), ch.token_logprobs.begin(), ch.token_logprobs.end());
          tops.insert(tops.end(), ch.top_logprobs.begin(), ch.top_logprobs.end());
          logprobs = completion_logprobs(tok_, ids, lps, tops, k, 0);
          if (!logprobs["token_logprobs"].empty()) {
            logprobs["token_logprobs"][0] = nullptr;
            logprobs["top_logprobs"][0] = nullptr;
          }
        } else {
          logprobs = completion_logprobs(tok_, ch.token_ids, ch.token_logprobs, ch.top_logprobs, k, 0);
        }
      }
      Json choice = {{"index", c},
                     {"text", std::move(text)},
                     {"logprobs", std::move(logprobs)},
                     {"finish_reason", ch.finish_reason.empty() ? Json() : Json(ch.finish_reason)},
                     {"stop_reason", ch.stop_reason}};
      if (req.prompt_logprobs >= 0) {
        choice["prompt_logprobs"] = prompt_logprobs_json(tok_, prompt_ids[i], prompt_logprobs[i], prompt_ranks[i]);
      }
      out_choices.push_back(std::move(choice));
    }
    const Json response = {{"id", id},
                           {"object", "text_completion"},
                           {"created", created},
                           {"model", model},
                           {"choices", std::move(out_choices)},
                           {"usage", usage()}};
    co_await respond_json(ex, response);
    co_return;
  }

  if (!co_await ex.start_stream("text/event-stream")) co_return;
  std::string out;
  std::vector<size_t> text_offset(num_prompts * static_cast<size_t>(n), 0);
  std::vector<int64_t> choice_tokens(num_prompts * static_cast<size_t>(n), 0);  // generated so far
  auto event = [&](size_t choice, std::string text, Json logprobs, Json finish, Json stop_reason) {
    Json chunk = {{"id", id},
                  {"object", "text_completion"},
                  {"created", created},
                  {"model", model},
                  {"choices", Json::array({Json{{"index", choice},
                                                {"text", std::move(text)},
                                                {"logprobs", std::move(logprobs)},
                                                {"finish_reason", std::move(finish)},
                                                {"stop_reason", std::move(stop_reason)}}})}};
    if (req.continuous_usage) {  // this choice's prompt and tokens so far
      const int64_t prompt = static_cast<int64_t>(prompt_ids[choice / static_cast<size_t>(n)].size());
      chunk["usage"] = usage_json(prompt, choice_tokens[choice], std::nullopt);
    }
    out += "data: ";
    out += dump(chunk);
    out += "\n\n";
  };
  if (req.echo) {
    for (size_t c = 0; c < text_offset.size(); ++c) {
      const std::string& prompt = prompt_texts[c / static_cast<size_t>(n)];
      text_offset[c] = prompt.size();
      event(c, prompt, nullptr, nullptr, nullptr);
    }
  }
  auto on_batch = [&](size_t i, StreamBatch& b) {
    if (!b.error.empty()) {
      out += "data: " + error_body(http::status::bad_request, b.error) + "\n\n";
      return;
    }
    cached[i] = std::max<int64_t>(cached[i], b.num_cached_tokens);
    for (const CompletionDelta& d : b.deltas) {
      const size_t c = i * static_cast<size_t>(n) + static_cast<size_t>(d.index);
      completion_tokens += static_cast<int64_t>(d.token_ids.size());
      choice_tokens[c] += static_cast<int64_t>(d.token_ids.size());
      Json logprobs = nullptr;
      if (req.logprobs >= 0) {
        logprobs = completion_logprobs(tok_, d.token_ids, d.token_logprobs, d.top_logprobs, k, text_offset[c]);
      }
      text_offset[c] += d.text.size();
      const bool last = !d.finish_reason.empty();
      if (d.text.empty() && !last && d.token_ids.empty()) continue;
      event(c, d.text, std::move(logprobs), last ? Json(d.finish_reason) : Json(),
            last ? stop_reason_json(d) : Json());
    }
  };
  if (!co_await streams.run(ex, on_batch, &out)) {
    ex.abandon();
    co_return;
  }
  if (req.include_usage) {
    out += "data: " +
           dump(Json{{"id", id},
                     {"object", "text_completion"},
                     {"created", created},
                     {"model", model},
                     {"choices", Json::array()},
                     {"usage", usage()}}) +
           "\n\n";
  }
  out += "data: [DONE]\n\n";
  if (co_await ex.write(out)) co_await ex.end_stream();
}

}  // namespace tessera::server
