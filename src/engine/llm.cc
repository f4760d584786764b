// LLM: the offline batch API over EngineCore. Requests of one generate() call run together
// under continuous batching; n > 1 fans out into child requests that share the prompt's
// blocks through the prefix cache.
#include "tessera/llm.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "engine/bad_words.h"
#include "engine/engine_setup.h"
#include "engine/llm_impl.h"

namespace tessera {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// "Processed prompts: 12/64 [00:03, in 410 tok/s, out 95 tok/s]" on stderr, redrawn in place
// on a terminal, printed once at the end otherwise.
class ProgressBar {
 public:
  ProgressBar(size_t total, bool enabled) : total_(total), enabled_(enabled && total > 0), tty_(isatty(2)), t0_(now_seconds()) {}
  void update(size_t done, int64_t in_tokens, int64_t out_tokens, bool final) {
    if (!enabled_ || (!tty_ && !final)) return;
    const double t = now_seconds();
    if (!final && t - last_ < 0.1) return;
    last_ = t;
    const double dt = std::max(t - t0_, 1e-9);
    std::fprintf(stderr, "%sProcessed prompts: %zu/%zu [%02d:%02d, in %.0f tok/s, out %.0f tok/s]%s", tty_ ? "\r" : "",
                 done, total_, static_cast<int>(dt) / 60, static_cast<int>(dt) % 60, in_tokens / dt, out_tokens / dt,
                 final ? "\n" : "");
    std::fflush(stderr);
  }

 private:
  size_t total_;
  bool enabled_, tty_;
  double t0_, last_ = 0;
};

}  // namespace

LLM::LLM(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LLM::~LLM() = default;

Result<std::unique_ptr<LLM>> LLM::create(const EngineArgs& args) {
  auto impl = std::make_unique<Impl>();
  impl->args = args;
  auto loaded = load_engine(args);
  if (!loaded.ok()) return loaded.status();
  impl->model = std::move(loaded->model);
  impl->tokenizer = std::move(loaded->tokenizer);
  impl->tokenizer_error = std::move(loaded->tokenizer_error);
  impl->engine = std::move(loaded->core);
  impl->stats.num_kv_blocks = impl->engine->plan().shape.num_blocks - 1;
  for (int64_t id : impl->model->config().eos_token_ids) impl->eos_token_ids.push_back(static_cast<int32_t>(id));
  if (!args.disable_log_stats) {
    std::fprintf(stderr, "tessera: %s\n", impl->engine->plan().describe(impl->engine->max_model_len()).c_str());
  }
  return std::unique_ptr<LLM>(new LLM(std::move(impl)));
}

int32_t LLM::max_model_len() const { return impl_->engine->max_model_len(); }
int64_t LLM::vocab_size() const { return impl_->model->config().vocab_size; }

const std::vector<int32_t>& LLM::eos_token_ids() const { return impl_->eos_token_ids; }

std::string LLM::decode(const std::vector<int32_t>& ids) const {
  if (!impl_->tokenizer) return "";
  auto text = impl_->tokenizer->decode(ids, /*skip_special_tokens=*/true);
  return text.ok() ? *text : "";
}

LLM::Stats LLM::stats() const {
  Stats s = impl_->stats;
  const EngineStats e = impl_->engine->stats();
  s.prefix_cache_queries = e.prefix_cache_queries;
  s.prefix_cache_hits = e.prefix_cache_hits;
  s.num_preemptions = e.num_preemptions;
  s.kv_offload_stores = e.kv_offload_stores;
  s.kv_offload_loads = e.kv_offload_loads;
  return s;
}

std::vector<RequestOutput> LLM::generate(const std::vector<PromptInput>& prompts, const SamplingParams& params) {
  return generate(prompts, std::vector<SamplingParams>(prompts.size(), params));
}

std::vector<RequestOutput> LLM::generate(const std::vector<PromptInput>& prompts,
                                         const std::vector<SamplingParams>& params) {
  return generate_batch(prompts, params, /*progress=*/true);
}

std::vector<RequestOutput> LLM::generate_batch(const std::vector<PromptInput>& prompts,
                                               const std::vector<SamplingParams>& params, bool progress) {
  Impl& m = *impl_;
  std::vector<RequestOutput> results(prompts.size());
  if (params.size() != prompts.size()) {
    for (auto& r : results) r.error = "generate: one SamplingParams per prompt expected";
    return results;
  }
  const tokenizer::Tokenizer* tok = m.tokenizer.get();
  std::vector<Impl::Child> children;
  std::unordered_map<RequestId, size_t> child_of;
  const double arrival = now_seconds();
  int64_t in_tokens = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    RequestOutput& res = results[i];
    res.request_id = std::to_string(m.next_request++);
    res.metrics.arrival_time = arrival;
    res.prompt = prompts[i].text;
    if (prompts[i].text) {
      if (tok == nullptr) {
        res.error = "text prompts need a tokenizer: " + m.tokenizer_error;
        continue;
      }
      auto ids = tok->encode(*prompts[i].text, /*add_special_tokens=*/true);
      if (!ids.ok()) {
        res.error = ids.error();
        continue;
      }
      res.prompt_token_ids = std::move(*ids);
    } else {
      res.prompt_token_ids = prompts[i].token_ids;
    }
    SamplingParams p = params[i];
    if (std::string err = p.validate(); !err.empty()) {
      res.error = err;
      continue;
    }
    if (!p.bad_words.empty()) {
      if (tok == nullptr) {
        res.error = "bad_words need a tokenizer: " + m.tokenizer_error;
        continue;
      }
      if (Status s = resolve_bad_words(&p, *tok); !s.ok()) {
        res.error = s.message();
        continue;
      }
    }
    for (int64_t c = 0; c < p.n; ++c) {
      Impl::Child child;
      child.prompt_idx = i;
      child.index = c;
      child.id = RequestId{m.next_request++};
      child.params = p;
      child.params.n = 1;
      if (p.seed) child.params.seed = *p.seed + static_cast<uint64_t>(c);  // distinct, reproducible streams
      child.out.index = c;
      child.tracker = std::make_unique<CompletionTracker>(tok, child.params, res.prompt_token_ids, c);
      auto req = std::make_unique<Request>(child.id, res.prompt_token_ids, child.params);
      req->arrival_seq = child.id.value;
      req->arrival_time = arrival;
      Status st = m.engine->add_request(std::move(req));
      if (!st.ok()) {
        res.error = st.message();
        break;
      }
      child_of[child.id] = children.size();
      children.push_back(std::move(child));
    }
    if (!res.error.empty()) {
      // A rejected prompt takes back any children already queued.
      for (auto& c : children) {
        if (c.prompt_idx == i && m.engine->abort_request(c.id)) m.engine->take_finished(c.id);
      }
      std::erase_if(children, [&](const Impl::Child& c) { return c.prompt_idx == i; });
      child_of.clear();
      for (size_t k = 0; k < children.size(); ++k) child_of[children[k].id] = k;
      continue;
    }
    in_tokens += static_cast<int64_t>(res.prompt_token_ids.size());
  }

  ProgressBar bar(prompts.size(), progress && !m.args.disable_progress_bar && prompts.size() > 1);
  size_t finished_children = 0, finished_prompts = 0;
  std::vector<int64_t> open_children(prompts.size(), 0);
  for (const auto& c : children) ++open_children[c.prompt_idx];
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (open_children[i] == 0) ++finished_prompts;
  }
  int64_t out_tokens = 0;
  // With a device runner each step's outputs are processed while the next step runs
  // (EngineCoreBase::launch_step): a stop string found then stops its request at once, and
  // the engine drops the request's results of steps in flight.
  std::vector<EngineStepOutput> step;
  double step_time = 0.0;
  auto finish_child = [&](Impl::Child& c, RequestStatus status, std::unique_ptr<Request> req, CompletionDelta* d) {
    RequestOutput& res = results[c.prompt_idx];
    c.done = true;
    c.tracker->finish(status, req ? req->stop_reason : std::nullopt, d);
    c.out.text += d->text;
    c.out.finish_reason = d->finish_reason;
    c.out.stop_token = d->stop_token;
    c.out.stop_string = d->stop_string;
    if (req && c.index == 0) res.num_cached_tokens = std::max(0, req->num_cached_tokens);
    res.metrics.first_token_time = std::max(res.metrics.first_token_time, c.first_token_time);
    res.metrics.finished_time = step_time;
    ++finished_children;
    if (--open_children[c.prompt_idx] == 0) {
      res.finished = true;
      ++finished_prompts;
    }
  };
  auto process = [&] {
    for (const EngineStepOutput& o : step) {
      auto it = child_of.find(o.id);
      if (it == child_of.end()) continue;
      Impl::Child& c = children[it->second];
      if (c.done) continue;
      RequestOutput& res = results[c.prompt_idx];
      if (c.index == 0 && !o.prompt_logprobs.empty()) {
        if (res.prompt_logprobs.empty()) {  // position 0
          res.prompt_logprobs.emplace_back();
          res.prompt_logprob_ranks.push_back(0);
        }
        res.prompt_logprobs.insert(res.prompt_logprobs.end(), o.prompt_logprobs.begin(), o.prompt_logprobs.end());
        res.prompt_logprob_ranks.insert(res.prompt_logprob_ranks.end(), o.prompt_ranks.begin(), o.prompt_ranks.end());
      }
      RequestStatus status = o.status;
      if (o.new_token) {
        ++out_tokens;
        if (!c.first_token_seen) {
          c.first_token_seen = true;
          c.first_token_time = step_time;
        }
        c.out.token_ids.push_back(*o.new_token);
        if (o.new_logprobs) {
          c.out.logprobs.push_back(*o.new_logprobs);
          c.cumulative += o.new_token_logprob;
          c.out.cumulative_logprob = c.cumulative;
        }
        CompletionDelta d;
        if (c.tracker->add(o, &d) && !is_finished(status)) {
          status = RequestStatus::kFinishedStopped;
          m.engine->stop_request(o.id);
        }
        c.out.text += d.text;
      }
      if (!is_finished(status)) continue;
      CompletionDelta d;
      finish_child(c, status, m.engine->take_finished(o.id), &d);
    }
    if (!step.empty()) bar.update(finished_prompts, in_tokens, out_tokens, false);
    step.clear();
  };
  const bool overlap = m.engine->launches_async();
  while (finished_children < children.size() && m.engine->has_unfinished() && m.engine->launch_step()) {
    if (overlap) process();  // the step before's outputs, while this one runs
    step = m.engine->finish_step();
    step_time = now_seconds();
    const EngineStats es = m.engine->stats();
    m.stats.peak_kv_blocks_used = std::max<int64_t>(m.stats.peak_kv_blocks_used,
                                                    static_cast<int64_t>(es.kv_cache_usage * m.stats.num_kv_blocks + 0.5));
    if (!overlap) process();
  }
  process();
  // A look-ahead step may still run for requests that have finished: its results are dropped.
  while (m.engine->has_unfinished() && m.engine->launch_step()) m.engine->finish_step();
  bar.update(finished_prompts, in_tokens, out_tokens, true);
  for (auto& c : children) results[c.prompt_idx].outputs.push_back(std::move(c.out));
  for (auto& r : results) {
    std::sort(r.outputs.begin(), r.outputs.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  }
  return results;
}

}  // namespace tessera
