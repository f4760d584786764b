#include "engine/frontend.h"

#include <algorithm>
#include <chrono>

#include "engine/request_validation.h"

namespace tessera {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

size_t reason_index(RequestStatus s) {
  switch (s) {
    case RequestStatus::kFinishedStopped: return 0;
    case RequestStatus::kFinishedLength: return 1;
    default: return 2;
  }
}

}  // namespace

// One request of the user: its n child requests in the engine and their completions.
struct EngineFrontend::Parent {
  std::shared_ptr<RequestStream> stream;
  std::vector<int32_t> prompt;
  std::vector<RequestId> ids;             // per child
  std::vector<CompletionTracker> trackers;  // per child
  std::vector<double> last_token_time;    // per child, 0 before its first token
  std::vector<double> child_first_token_time;  // per child, 0 before its first token
  std::vector<bool> done;                 // per child
  size_t open = 0;
  size_t num_seqs = 1;  // the request's n, as counted in num_unfinished_seqs_
  double arrival_time = 0.0;
  double first_token_time = 0.0;
  bool wants_prompt_logprobs = false;
  bool prompt_logprobs_started = false;
  int32_t num_cached_tokens = 0;  // prefix-cache hit of the prompt (child 0)
  double finished_time = 0.0;     // when the last child finished
  double scheduled_time = 0.0;    // when child 0 was first admitted to a step
};

EngineFrontend::EngineFrontend(EngineCoreBase& core, const tokenizer::Tokenizer* tok)
    : core_(core), tok_(tok), max_model_len_(core.max_model_len()), vocab_size_(core.vocab_size()),
      metrics_(core.max_model_len()) {
  if (tok_ != nullptr) {
    structured_ = std::make_unique<structured::StructuredOutputs>(*tok_, vocab_size_, core.eos_token_ids());
  }
}

EngineFrontend::~EngineFrontend() = default;

Status EngineFrontend::validate(const std::vector<int32_t>& prompt, const SamplingParams& params) const {
  TESSERA_RETURN_IF_ERROR(validate_request(prompt, params, RequestLimits{vocab_size_, max_model_len_}));
  if (params.structured_outputs) return compile_grammar(params).status();
  return Status();
}

Result<std::shared_ptr<const structured::CompiledGrammar>> EngineFrontend::compile_grammar(
    const SamplingParams& params) const {
  if (structured_ == nullptr) return Status::error("structured outputs need the model's tokenizer");
  return structured_->compile(*params.structured_outputs);
}

void EngineFrontend::count_incoming(const SamplingParams& params) {
  num_unfinished_.fetch_add(1, std::memory_order_relaxed);
  num_unfinished_seqs_.fetch_add(static_cast<size_t>(std::max<int64_t>(params.n, 1)), std::memory_order_relaxed);
}

void EngineFrontend::uncount(size_t num_seqs) {
  num_unfinished_.fetch_sub(1, std::memory_order_relaxed);
  num_unfinished_seqs_.fetch_sub(num_seqs, std::memory_order_relaxed);
}

EngineMetrics EngineFrontend::metrics() const {
  std::lock_guard lock(metrics_mu_);
  return metrics_;
}

void EngineFrontend::abort_all() {
  std::vector<uint64_t> ids;
  for (const auto& [id, a] : parents_) ids.push_back(id);
  for (uint64_t id : ids) abort(id);
}

void EngineFrontend::step() {
  // A step may be in flight here (async scheduling): the engine drops its results for
  // requests aborted since. With a device runner the last step's outputs go out while the
  // next step computes; a host runner computes in launch_step, so they go out first.
  const bool launched = core_.has_unfinished() && core_.launch_step();
  std::vector<EngineStepOutput> done = std::move(held_);
  held_.clear();
  process(done);
  if (launched) {
    held_ = core_.finish_step();
    if (!core_.launches_async()) {
      process(held_);
      held_.clear();
    }
  }
  const EngineStats s = core_.stats();
  std::lock_guard lock(metrics_mu_);
  for (int32_t tokens : core_.take_step_tokens()) metrics_.iteration_tokens.observe(static_cast<double>(tokens));
  metrics_.num_requests_running = static_cast<int64_t>(s.num_running);
  metrics_.num_requests_waiting = static_cast<int64_t>(s.num_waiting);
  metrics_.kv_cache_usage = s.kv_cache_usage;
  metrics_.num_preemptions = s.num_preemptions;
  metrics_.prefix_cache_queries = s.prefix_cache_queries;
  metrics_.prefix_cache_hits = s.prefix_cache_hits;
  metrics_.kv_offload_stores = s.kv_offload_stores;
  metrics_.kv_offload_loads = s.kv_offload_loads;
}

void EngineFrontend::add(std::shared_ptr<RequestStream> stream, GenerateRequest request, double arrival_time,
                         bool counted) {
  if (!counted) count_incoming(request.params);
  const GenerateRequest& g = request;
  auto a = std::make_unique<Parent>();
  a->stream = stream;
  a->prompt = g.prompt_token_ids;
  a->arrival_time = arrival_time;
  a->wants_prompt_logprobs = g.params.prompt_logprobs >= 0;
  a->num_seqs = static_cast<size_t>(std::max<int64_t>(g.params.n, 1));
  Status status = validate(g.prompt_token_ids, g.params);
  // The grammar, compiled by validate (usually on the caller's thread) and found in the cache.
  std::shared_ptr<const structured::CompiledGrammar> grammar;
  if (status.ok() && g.params.structured_outputs) {
    auto compiled = compile_grammar(g.params);
    status = compiled.status();
    if (compiled.ok()) grammar = *compiled;
  }
  for (int64_t c = 0; status.ok() && c < g.params.n; ++c) {
    SamplingParams p = g.params;
    p.n = 1;
    if (g.params.seed) p.seed = *g.params.seed + static_cast<uint64_t>(c);  // distinct, reproducible streams
    if (c > 0) p.prompt_logprobs = -1;  // the prompt's logprobs come once, from child 0
    auto req = std::make_unique<Request>(RequestId{next_request_++}, g.prompt_token_ids, p);
    req->priority = g.priority;
    req->arrival_seq = req->id.value;
    req->arrival_time = arrival_time;
    if (grammar != nullptr) {
      req->constraint = structured_->matcher(*grammar);
      req->constraint_start_after = g.params.structured_outputs->start_after;
    }
    const RequestId id = req->id;
    status = core_.add_request(std::move(req));
    if (!status.ok()) break;
    a->ids.push_back(id);
    a->trackers.emplace_back(tok_, p, a->prompt, c);
    a->last_token_time.push_back(0.0);
    a->child_first_token_time.push_back(0.0);
    a->done.push_back(false);
  }
  if (!status.ok()) {
    for (RequestId id : a->ids) {
      if (core_.abort_request(id)) core_.take_finished(id);
    }
    stream->update([&](StreamBatch& b) {
      b.error = status.message();
      b.finished = true;
    });
    uncount(a->num_seqs);
    stream->notify();
    return;
  }
  a->open = a->ids.size();
  for (size_t c = 0; c < a->ids.size(); ++c) child_of_[a->ids[c]] = {a.get(), c};
  {
    std::lock_guard lock(metrics_mu_);
    metrics_.prompt_tokens += static_cast<int64_t>(g.prompt_token_ids.size());
    metrics_.request_prompt_tokens.observe(static_cast<double>(g.prompt_token_ids.size()));
    metrics_.request_params_max_tokens.observe(static_cast<double>(g.params.max_tokens));
    metrics_.request_params_n.observe(static_cast<double>(g.params.n));
  }
  parents_.emplace(stream->id(), std::move(a));
}

void EngineFrontend::abort(uint64_t stream_id) {
  auto it = parents_.find(stream_id);
  if (it == parents_.end()) return;
  Parent& a = *it->second;
  std::vector<CompletionDelta> deltas;
  for (size_t c = 0; c < a.ids.size() && a.open > 0; ++c) {
    if (a.done[c]) continue;
    if (core_.abort_request(a.ids[c])) core_.take_finished(a.ids[c]);
    deltas.emplace_back();
    finish_child(a, c, RequestStatus::kFinishedAborted, &deltas.back());
  }
  publish(a, &deltas, nullptr);
  if (a.open == 0) parents_.erase(it);
}

void EngineFrontend::publish(Parent& a, std::vector<CompletionDelta>* deltas, PromptLogprobs* prompt_logprobs) {
  const bool done = a.open == 0;
  // One update: a consumer that sees `finished` has every delta too.
  a.stream->update([&](StreamBatch& b) {
    if (deltas != nullptr) {
      for (auto& d : *deltas) b.deltas.push_back(std::move(d));
    }
    if (prompt_logprobs != nullptr) {
      for (auto& lp : prompt_logprobs->logprobs) b.prompt_logprobs.push_back(std::move(lp));
      b.prompt_ranks.insert(b.prompt_ranks.end(), prompt_logprobs->ranks.begin(), prompt_logprobs->ranks.end());
    }
    if (done) {
      b.finished = true;
      b.num_cached_tokens = a.num_cached_tokens;
      b.metrics.arrival_time = a.arrival_time;
      b.metrics.scheduled_time = a.scheduled_time;
      b.metrics.first_token_time = a.first_token_time;
      b.metrics.finished_time = a.finished_time;
    }
  });
  if (done) {
    uncount(a.num_seqs);
  }
  a.stream->notify();
}

void EngineFrontend::finish_child(Parent& a, size_t c, RequestStatus status, CompletionDelta* d) {
  std::unique_ptr<Request> req = core_.take_finished(a.ids[c]);
  std::optional<int32_t> stop_token;
  if (req) stop_token = req->stop_reason;
  a.trackers[c].finish(status, stop_token, d);
  a.done[c] = true;
  --a.open;
  child_of_.erase(a.ids[c]);
  const double t = now_seconds();
  const EngineStats s = core_.stats();
  {
    std::lock_guard lock(metrics_mu_);
    ++metrics_.request_success[reason_index(status)];
    // The gauges move with the counter: a scrape that sees the request done sees it gone.
    metrics_.num_requests_running = static_cast<int64_t>(s.num_running);
    metrics_.num_requests_waiting = static_cast<int64_t>(s.num_waiting);
    metrics_.request_generation_tokens.observe(static_cast<double>(a.trackers[c].num_tokens()));
    const double first_token = a.child_first_token_time[c];
    if (req && req->first_scheduled_time > 0.0 && first_token > 0.0) {
      metrics_.request_prefill_time.observe(first_token - req->first_scheduled_time);
      metrics_.request_decode_time.observe(t - first_token);
      metrics_.request_inference_time.observe(t - req->first_scheduled_time);
    }
    if (c == 0) {
      metrics_.e2e_request_latency.observe(t - a.arrival_time);
      if (req && req->first_scheduled_time > 0.0) {
        metrics_.request_queue_time.observe(req->first_scheduled_time - a.arrival_time);
      }
    }
  }
  if (c == 0 && req) {
    a.num_cached_tokens = std::max(0, req->num_cached_tokens);
    a.scheduled_time = req->first_scheduled_time;
  }
  if (a.open == 0) a.finished_time = t;
}

void EngineFrontend::process(const std::vector<EngineStepOutput>& outputs) {
  if (outputs.empty()) return;
  const double t = now_seconds();
  // Deltas grouped per stream, so each consumer wakes once per step.
  std::unordered_map<Parent*, std::vector<CompletionDelta>> news;
  std::unordered_map<Parent*, PromptLogprobs> prompt_news;
  std::vector<Parent*> order;
  std::vector<double> itls;
  std::vector<double> ttfts;
  {
    // The step's tokens are counted before any of its requests is counted finished (below,
    // finish_child) or answered (publish), so a scrape that sees a request done sees its
    // tokens too.
    int64_t new_tokens = 0;
    for (const EngineStepOutput& o : outputs) {
      if (o.new_token && child_of_.count(o.id) != 0) ++new_tokens;
    }
    std::lock_guard lock(metrics_mu_);
    metrics_.generation_tokens += new_tokens;
  }
  for (const EngineStepOutput& o : outputs) {
    auto it = child_of_.find(o.id);
    if (it == child_of_.end()) continue;
    auto [a, c] = it->second;
    if (news.find(a) == news.end() && prompt_news.find(a) == prompt_news.end()) order.push_back(a);
    if (!o.prompt_logprobs.empty()) {
      PromptLogprobs& p = prompt_news[a];
      if (!a->prompt_logprobs_started) {
        a->prompt_logprobs_started = true;
        p.logprobs.emplace_back();  // nothing predicts the first prompt token
        p.ranks.push_back(0);
      }
      p.logprobs.insert(p.logprobs.end(), o.prompt_logprobs.begin(), o.prompt_logprobs.end());
      p.ranks.insert(p.ranks.end(), o.prompt_ranks.begin(), o.prompt_ranks.end());
    }
    CompletionDelta d;
    RequestStatus status = o.status;
    if (o.new_token) {
      if (a->first_token_time == 0.0) {
        a->first_token_time = t;
        ttfts.push_back(t - a->arrival_time);
      }
      if (a->last_token_time[c] > 0.0) itls.push_back(t - a->last_token_time[c]);
      if (a->child_first_token_time[c] == 0.0) a->child_first_token_time[c] = t;
      a->last_token_time[c] = t;
      if (a->trackers[c].add(o, &d) && !is_finished(status)) {
        core_.stop_request(o.id);
        status = RequestStatus::kFinishedStopped;
      }
    } else {
      d.index = a->trackers[c].index();
    }
    if (is_finished(status)) finish_child(*a, c, status, &d);
    if (o.new_token || is_finished(status)) news[a].push_back(std::move(d));
  }
  for (Parent* a : order) {
    auto n = news.find(a);
    auto p = prompt_news.find(a);
    publish(*a, n != news.end() ? &n->second : nullptr, p != prompt_news.end() ? &p->second : nullptr);
  }
  {
    std::lock_guard lock(metrics_mu_);
    for (double v : ttfts) metrics_.time_to_first_token.observe(v);
    for (double v : itls) metrics_.inter_token_latency.observe(v);
  }
  for (Parent* a : order) {
    if (a->open == 0) parents_.erase(a->stream->id());
  }
}

}  // namespace tessera
