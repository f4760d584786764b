// vLLM's beam search in the server (use_beam_search: vLLM's OpenAIServing.beam_search): the
// BeamSearchState machine (src/engine/beam_search_state.h, the one LLM::beam_search runs)
// driven through the AsyncEngine. Each step every live beam of every prompt is one engine
// request (its prompt + tokens so far; one token, its top 2 * n logprobs); the step's requests
// are awaited together the way a completion awaits its streams, so the I/O thread serves other
// connections meanwhile, and a client that leaves aborts them. The result arrives all at once,
// as one finished batch per prompt that the completion and chat handlers turn into choices.
#include <algorithm>

#include "engine/beam_search_state.h"
#include "server/api_server.h"
#include "server/serving_common.h"

namespace tessera::server {

BeamSearchRequest ApiServer::beam_search_request(std::vector<int32_t> prompt_ids, const SamplingParams& params,
                                                            double length_penalty, int32_t priority) const {
  if (tok_ == nullptr) bad_request("beam search needs the model's tokenizer (its EOS token and the beams' text)");
  // Each step asks the engine for 2 * n logprobs: vLLM's limit and text.
  check_logprobs(2 * params.n, -1);
  BeamSearchRequest r;
  r.params.beam_width = params.n;
  r.params.max_tokens = params.max_tokens;
  r.params.ignore_eos = params.ignore_eos;
  r.params.length_penalty = length_penalty;
  r.params.temperature = params.temperature;
  if (const std::string error = BeamSearchState::validate(r.params); !error.empty()) bad_request(error, "n");
  // The prompt as each step's request will carry it (a beam only grows up to max_tokens,
  // which fit_max_tokens bounded by the context).
  if (Status s = engine_.validate(prompt_ids, BeamSearchState::step_params(r.params)); !s.ok()) {
    bad_request(s.message());
  }
  r.prompt_ids = std::move(prompt_ids);
  r.priority = priority;
  r.include_stop_str_in_output = params.include_stop_str_in_output;
  r.skip_special_tokens = params.skip_special_tokens;
  return r;
}

namespace {

// A search's result as the handlers take a stream's: one finished delta per beam, best first.
StreamBatch result_batch(std::vector<BeamSequence> beams, const BeamSearchRequest& r,
                         const tokenizer::Tokenizer& tok, std::optional<int32_t> eos, int32_t cached_tokens) {
  StreamBatch batch;
  batch.finished = true;
  batch.num_cached_tokens = cached_tokens;
  for (size_t k = 0; k < beams.size(); ++k) {
    BeamSequence& beam = beams[k];
    CompletionDelta d;
    d.index = static_cast<int64_t>(k);
    d.token_ids = std::move(beam.output_token_ids);
    d.top_logprobs = std::move(beam.logprobs);
    // A finished beam's EOS token is never text; it is a token only when asked for (vLLM).
    std::vector<int32_t> text_ids = d.token_ids;
    if (beam.finished_by_eos) {
      text_ids.pop_back();
      if (!r.include_stop_str_in_output) {
        d.token_ids.pop_back();
        d.top_logprobs.pop_back();
      }
      d.finish_reason = "stop";
      d.stop_token = eos;
    } else {
      d.finish_reason = "length";
    }
    for (size_t t = 0; t < d.token_ids.size(); ++t) {
      const PositionLogprobs& top = d.top_logprobs[t];
      auto it = std::find_if(top.begin(), top.end(), [&](const auto& e) { return e.first == d.token_ids[t]; });
      d.token_logprobs.push_back(it != top.end() ? it->second : 0.0f);
    }
    auto text = tok.decode(text_ids, r.skip_special_tokens);
    if (text.ok()) d.text = std::move(*text);
    batch.deltas.push_back(std::move(d));
  }
  return batch;
}

}  // namespace

net::awaitable<bool> ApiServer::run_beam_search(HttpExchange& ex, const std::vector<BeamSearchRequest>& requests,
                                                const std::function<void(size_t, StreamBatch&)>& on_batch,
                                                std::string* sse) {
  if (sse != nullptr && !sse->empty()) {  // what a stream has ready before the result (chat's roles)
    const bool written = co_await ex.write(*sse);
    sse->clear();
    if (!written) co_return false;
  }
  // vLLM's beam search ends a beam at the tokenizer's EOS token.
  const std::optional<int32_t> eos = tok_->special_tokens().eos_id;
  const std::vector<int32_t> eos_ids = eos ? std::vector<int32_t>{*eos} : std::vector<int32_t>{};
  std::vector<BeamSearchState> searches;
  for (const BeamSearchRequest& r : requests) searches.emplace_back(r.prompt_ids, r.params, eos_ids);
  std::vector<int32_t> cached(requests.size(), 0);  // the prompt's prefix-cache hit (first step)
  const std::function<void()> wake = ex.waker();
  std::string error;
  for (bool first = true; error.empty(); first = false) {
    // One step: a request per live beam, grouped by search.
    StreamSet streams(engine_);
    std::vector<size_t> search_of;
    for (size_t s = 0; s < searches.size(); ++s) {
      if (searches[s].done()) continue;
      const SamplingParams step = BeamSearchState::step_params(requests[s].params);
      for (size_t b = 0; b < searches[s].num_live(); ++b) {
        const std::vector<int32_t>& ids = searches[s].live_token_ids(b);
        streams.add(engine_.add_request(GenerateRequest{ids, step, requests[s].priority, wake}));
        search_of.push_back(s);
      }
    }
    if (search_of.empty()) break;
    std::vector<PositionLogprobs> next(search_of.size());
    auto collect = [&](size_t i, StreamBatch& b) {
      if (!b.error.empty()) error = b.error;
      for (CompletionDelta& d : b.deltas) {
        if (!d.top_logprobs.empty()) next[i] = std::move(d.top_logprobs.front());
      }
      if (first && b.finished) cached[search_of[i]] = std::max(cached[search_of[i]], b.num_cached_tokens);
    };
    // A client gone aborts the step's requests (the StreamSet's end).
    if (!co_await streams.run(ex, collect, nullptr)) co_return false;
    for (size_t i = 0; i < search_of.size();) {
      size_t j = i;
      while (j < search_of.size() && search_of[j] == search_of[i]) ++j;
      searches[search_of[i]].advance(std::vector<PositionLogprobs>(next.begin() + static_cast<std::ptrdiff_t>(i),
                                                                   next.begin() + static_cast<std::ptrdiff_t>(j)));
      i = j;
    }
  }
  std::vector<StreamBatch> batches(requests.size());
  if (!error.empty()) {
    for (StreamBatch& b : batches) {
      b.error = error;
      b.finished = true;
    }
  } else {
    // Ranking, copying the histories out and decoding: on a worker.
    size_t work = 0;  // about the bytes of the beams' candidates
    for (const BeamSearchRequest& r : requests) {
      const int64_t candidates = BeamSearchState::step_params(r.params).logprobs;
      work += static_cast<size_t>(r.params.beam_width * r.params.max_tokens * candidates) * 8;
    }
    batches = co_await lane(work).run([&] {
      std::vector<StreamBatch> out;
      for (size_t s = 0; s < searches.size(); ++s) {
        out.push_back(result_batch(searches[s].take_best(), requests[s], *tok_, eos, cached[s]));
      }
      return out;
    });
  }
  for (size_t s = 0; s < batches.size(); ++s) on_batch(s, batches[s]);
  if (sse != nullptr && !sse->empty()) {
    const bool written = co_await ex.write(*sse);
    sse->clear();
    if (!written) co_return false;
  }
  co_return true;
}

}  // namespace tessera::server
