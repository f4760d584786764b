// POST /v1/completions: one engine request per prompt (n completions each); choice
// index = prompt index * n + completion index, as OpenAI numbers them.
#include "server/api_server.h"
#include "server/serving_common.h"

namespace tessera::server {

namespace {

// A request checked and tokenized, ready for the engine.
struct PreparedCompletion {
  CompletionRequest req;
  std::vector<std::vector<int32_t>> prompt_ids;
  std::vector<SamplingParams> params;
  std::vector<std::string> prompt_texts;  // echo: what each choice's text starts with
  size_t fixed_reply_bytes = 0;           // the least the reply takes, from the request alone
  std::vector<BeamSearchRequest> beams;  // use_beam_search: one search per prompt
};

// Fewest reply bytes one generated token adds beyond its text: its entries in tokens,
// token_logprobs, top_logprobs (alternatives with equal text collapse into one) and
// text_offset, when logprobs are asked for.
constexpr size_t kMinLogprobTokenBytes = 12;

}  // namespace

net::awaitable<void> ApiServer::completions(HttpExchange& ex) {
  // Everything is checked before the first request starts; parsing and tokenizing (seconds
  // for a long prompt) run on a worker.
  const std::string& body = ex.request().body();  // the prompts' text is within it
  PreparedCompletion prep = co_await lane(body.size()).run([&] {
    PreparedCompletion p;
    p.req = parse_completion_request(parse_json_body(body), config_.sampling_defaults);
    CompletionRequest& req = p.req;
    // vLLM's --enable-force-include-usage: usage in every chunk and at the end, asked or not.
    if (config_.enable_force_include_usage) req.include_usage = req.continuous_usage = true;
    check_request(req.model, req.priority, req.prompts.size(), req.params.n);
    resolve_all_logprobs(&req.logprobs, &req.prompt_logprobs, &req.params);
    check_logprobs(req.logprobs, req.prompt_logprobs);
    if (req.use_beam_search) {
      // vLLM's beam search reports no prompt logprobs (and fails on echo with logprobs).
      if (req.echo && req.logprobs >= 0) bad_request("echo with logprobs is not supported with beam search", "echo");
      req.prompt_logprobs = -1;
      req.params.prompt_logprobs = -1;
    } else {
      resolve_bad_words(&req.params);
    }
    const size_t num_prompts = req.prompts.size();
    p.prompt_ids.resize(num_prompts);
    p.params.assign(num_prompts, req.params);
    p.prompt_texts.resize(num_prompts);
    ReplyBudget budget(config_.max_response_bytes);  // the parts the request fixes
    for (size_t i = 0; i < num_prompts; ++i) {
      PromptSpec& spec = req.prompts[i];
      std::vector<int32_t>& ids = p.prompt_ids[i];
      ids = spec.text ? encode(*spec.text, req.add_special_tokens, "prompt") : std::move(spec.token_ids);
      const bool truncated = truncate_prompt(&ids, req.truncate_prompt_tokens, req.truncate_right);
      fit_max_tokens(ids.size(), req.max_tokens_given, &p.params[i]);
      if (req.use_beam_search) {
        p.beams.push_back(beam_search_request(ids, p.params[i], req.length_penalty, req.priority));
      } else if (Status s = engine_.validate(ids, p.params[i]); !s.ok()) {
        bad_request(s.message());
      }
      if (req.echo && spec.text && !truncated) p.prompt_texts[i] = *spec.text;
      if (req.echo && (!spec.text || truncated) && tok_ != nullptr) {
        auto text = tok_->decode(ids, /*skip_special_tokens=*/false);
        if (text.ok()) p.prompt_texts[i] = std::move(*text);
      }
      const size_t n = static_cast<size_t>(req.params.n);
      if (req.prompt_logprobs >= 0) budget.charge(n * (ids.size() - 1) * min_prompt_logprob_bytes(req.prompt_logprobs));
      if (req.echo) budget.charge(n * p.prompt_texts[i].size());
      if (req.echo && req.logprobs >= 0) budget.charge(n * ids.size() * kMinLogprobTokenBytes);
    }
    p.fixed_reply_bytes = budget.used();
    return p;
  });
  CompletionRequest& req = prep.req;
  const std::vector<std::vector<int32_t>>& prompt_ids = prep.prompt_ids;
  const std::vector<std::string>& prompt_texts = prep.prompt_texts;
  const size_t num_prompts = req.prompts.size();
  const int64_t n = req.params.n;
  check_capacity(num_prompts * static_cast<size_t>(n));

  StreamSet streams(engine_);
  const std::function<void()> wake = ex.waker();
  for (size_t i = 0; i < num_prompts && !req.use_beam_search; ++i) {
    streams.add(engine_.add_request(GenerateRequest{prompt_ids[i], prep.params[i], req.priority, wake}));
  }
  const std::string id = req.request_id ? "cmpl-" + *req.request_id : random_id("cmpl-");
  const int64_t created = unix_time();
  const std::string& model = config_.served_model_name;
  // Alternatives per position: the top k, or every candidate the engine gave for
  // logprob_token_ids (the chosen token and those asked for).
  const int64_t k = req.params.logprob_token_ids.empty() ? std::max<int64_t>(req.logprobs, 0) : kAllLogprobs;
  const TokenNames names{tok_, req.return_tokens_as_token_ids.value_or(config_.return_tokens_as_token_ids)};
  int64_t prompt_tokens = 0;
  for (const auto& p : prompt_ids) prompt_tokens += static_cast<int64_t>(p.size());
  int64_t completion_tokens = 0;
  std::string error;
  // Prompt tokens each prompt's request got from the prefix cache (known once it finishes).
  std::vector<int64_t> cached(num_prompts, 0);
  // --enable-per-request-metrics: the first prompt's request's timings and tokens.
  RequestMetrics timings;
  int64_t timed_tokens = 0;
  auto note_timings = [&](size_t i, const StreamBatch& b) {
    if (i != 0) return;
    for (const CompletionDelta& d : b.deltas) timed_tokens += static_cast<int64_t>(d.token_ids.size());
    if (b.finished) timings = b.metrics;
  };
  auto metrics_json = [&] { return config_.enable_per_request_metrics ? per_request_metrics_json(timings, timed_tokens) : Json(); };
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
    // Refuses a reply that outgrows the limit as its tokens arrive, before it is built.
    ReplyBudget estimate(config_.max_response_bytes);
    estimate.charge(prep.fixed_reply_bytes);
    auto on_batch = [&](size_t i, StreamBatch& b) {
      if (!b.error.empty()) error = b.error;
      note_timings(i, b);
      cached[i] = std::max<int64_t>(cached[i], b.num_cached_tokens);
      for (auto& lp : b.prompt_logprobs) prompt_logprobs[i].push_back(std::move(lp));
      prompt_ranks[i].insert(prompt_ranks[i].end(), b.prompt_ranks.begin(), b.prompt_ranks.end());
      for (const CompletionDelta& d : b.deltas) {
        choices[i * n + d.index].append(d);
        estimate.charge(d.text.size() + (req.logprobs >= 0 ? d.token_ids.size() * kMinLogprobTokenBytes : 0));
      }
    };
    // Beam search (never streamed: refused when parsed) hands over its result at the end.
    const bool done = req.use_beam_search ? co_await run_beam_search(ex, prep.beams, on_batch, nullptr)
                                          : co_await streams.run(ex, on_batch, nullptr);
    if (!done) {
      ex.abandon();
      co_return;
    }
    if (!error.empty()) bad_request(error);
    for (const ChoiceState& ch : choices) completion_tokens += static_cast<int64_t>(ch.token_ids.size());
    // Assembled on a worker, piece by piece; each prompt's prompt_logprobs serialized once.
    std::string reply = co_await lane(estimate.used()).run([&] {
      ReplyBudget budget(config_.max_response_bytes);
      std::vector<std::string> shared_prompt_logprobs(num_prompts);
      if (req.prompt_logprobs >= 0) {
        for (size_t i = 0; i < num_prompts; ++i) {
          shared_prompt_logprobs[i] = dump(prompt_logprobs_json(tok_, prompt_ids[i], prompt_logprobs[i], prompt_ranks[i]));
          budget.charge(shared_prompt_logprobs[i].size() * static_cast<size_t>(n));
        }
      }
      std::string out = dump(Json{{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model}});
      out.pop_back();  // the closing brace: the choices follow
      budget.append(&out, ",\"choices\":[");
      for (size_t c = 0; c < choices.size(); ++c) {
        ChoiceState& ch = choices[c];
        const size_t i = c / static_cast<size_t>(n);
        Json logprobs = nullptr;
        std::string text = req.echo ? prompt_texts[i] + ch.text : std::move(ch.text);
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
            logprobs = completion_logprobs(names, ids, lps, tops, k, 0);
            if (!logprobs["token_logprobs"].empty()) {
              logprobs["token_logprobs"][0] = nullptr;
              logprobs["top_logprobs"][0] = nullptr;
            }
          } else {
            logprobs = completion_logprobs(names, ch.token_ids, ch.token_logprobs, ch.top_logprobs, k, 0);
          }
        }
        // vLLM's fields in vLLM's order, those not asked for as null.
        std::string choice = dump(Json{{"index", c},
                                       {"text", std::move(text)},
                                       {"logprobs", std::move(logprobs)},
                                       {"finish_reason", ch.finish_reason.empty() ? Json() : Json(ch.finish_reason)},
                                       {"stop_reason", ch.stop_reason},
                                       {"token_ids", req.return_token_ids ? Json(ch.token_ids) : Json()}});
        choice.pop_back();
        choice += ",\"prompt_logprobs\":";
        choice += req.prompt_logprobs >= 0 ? shared_prompt_logprobs[i] : "null";
        choice += ",\"prompt_token_ids\":";
        choice += req.return_token_ids ? dump(Json(prompt_ids[i])) : "null";
        choice += '}';
        if (c > 0) budget.append(&out, ",");
        budget.append(&out, choice);
      }
      budget.append(&out, "],\"service_tier\":null,\"system_fingerprint\":null,\"usage\":");
      budget.append(&out, dump(usage()));
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
  std::vector<size_t> text_offset(num_prompts * static_cast<size_t>(n), 0);  // characters so far
  std::vector<int64_t> choice_tokens(num_prompts * static_cast<size_t>(n), 0);  // generated so far
  std::vector<bool> sent_prompt_ids(text_offset.size(), false);  // return_token_ids: on a choice's first chunk
  auto event = [&](size_t choice, std::string text, Json logprobs, Json finish, Json stop_reason,
                   const std::vector<int32_t>& token_ids) {
    Json c = {{"index", choice},
              {"text", std::move(text)},
              {"logprobs", std::move(logprobs)},
              {"finish_reason", std::move(finish)},
              {"stop_reason", std::move(stop_reason)}};
    if (req.return_token_ids) {
      if (!sent_prompt_ids[choice]) c["prompt_token_ids"] = prompt_ids[choice / static_cast<size_t>(n)];
      sent_prompt_ids[choice] = true;
      c["token_ids"] = token_ids;
    }
    Json chunk = {{"id", id},
                  {"object", "text_completion"},
                  {"created", created},
                  {"model", model},
                  {"choices", Json::array({std::move(c)})}};
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
      text_offset[c] = utf8_length(prompt);
      event(c, prompt, nullptr, nullptr, nullptr, {});
    }
  }
  auto on_batch = [&](size_t i, StreamBatch& b) {
    if (!b.error.empty()) {
      out += "data: " + error_body(http::status::bad_request, b.error) + "\n\n";
      return;
    }
    note_timings(i, b);
    cached[i] = std::max<int64_t>(cached[i], b.num_cached_tokens);
    for (const CompletionDelta& d : b.deltas) {
      const size_t c = i * static_cast<size_t>(n) + static_cast<size_t>(d.index);
      completion_tokens += static_cast<int64_t>(d.token_ids.size());
      choice_tokens[c] += static_cast<int64_t>(d.token_ids.size());
      Json logprobs = nullptr;
      if (req.logprobs >= 0) {
        logprobs = completion_logprobs(names, d.token_ids, d.token_logprobs, d.top_logprobs, k, text_offset[c]);
      }
      text_offset[c] += utf8_length(d.text);
      const bool last = !d.finish_reason.empty();
      if (d.text.empty() && !last && d.token_ids.empty()) continue;
      event(c, d.text, std::move(logprobs), last ? Json(d.finish_reason) : Json(),
            last ? stop_reason_json(d) : Json(), d.token_ids);
    }
  };
  if (!co_await streams.run(ex, on_batch, &out)) {
    ex.abandon();
    co_return;
  }
  if (req.include_usage) {
    Json chunk = {{"id", id},          {"object", "text_completion"}, {"created", created},
                  {"model", model},    {"choices", Json::array()},    {"usage", usage()}};
    if (config_.enable_per_request_metrics) chunk["metrics"] = metrics_json();  // timings in the usage chunk only
    out += "data: " + dump(chunk) + "\n\n";
  }
  out += "data: [DONE]\n\n";
  if (co_await ex.write(out)) co_await ex.end_stream();
}

}  // namespace tessera::server
