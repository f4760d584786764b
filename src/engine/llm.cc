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
#include "engine/frontend.h"
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
  impl->frontend = std::make_unique<EngineFrontend>(*impl->engine, impl->tokenizer.get());
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
  auto text = decode(ids, /*skip_special_tokens=*/true);
  return text.ok() ? *text : "";
}

Result<std::vector<int32_t>> LLM::encode(const std::string& text, bool add_special_tokens) const {
  if (!impl_->tokenizer) return Status::error("the model has no tokenizer: " + impl_->tokenizer_error);
  return impl_->tokenizer->encode(text, add_special_tokens);
}

Result<std::string> LLM::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  if (!impl_->tokenizer) return Status::error("the model has no tokenizer: " + impl_->tokenizer_error);
  return impl_->tokenizer->decode(ids, skip_special_tokens);
}

Result<TokenizerInfo> LLM::tokenizer_info() const {
  if (!impl_->tokenizer) return Status::error("the model has no tokenizer: " + impl_->tokenizer_error);
  const tokenizer::SpecialTokens& s = impl_->tokenizer->special_tokens();
  return TokenizerInfo{static_cast<int64_t>(impl_->tokenizer->vocab_size()), s.bos_id, s.eos_id, s.pad_id,
                       s.bos_token, s.eos_token};
}

Result<std::optional<std::string>> LLM::id_to_token(int32_t id) const {
  if (!impl_->tokenizer) return Status::error("the model has no tokenizer: " + impl_->tokenizer_error);
  return impl_->tokenizer->id_to_token(id);
}

Result<std::optional<int32_t>> LLM::token_to_id(const std::string& token) const {
  if (!impl_->tokenizer) return Status::error("the model has no tokenizer: " + impl_->tokenizer_error);
  return impl_->tokenizer->token_to_id(token);
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

std::vector<RequestOutput> LLM::generate(const std::vector<PromptInput>& prompts,
                                         const std::vector<SamplingParams>& params, const ProgressCallback& on_step) {
  return generate_batch(prompts, params, /*progress=*/true, on_step);
}

std::vector<RequestOutput> LLM::generate_batch(const std::vector<PromptInput>& prompts,
                                               const std::vector<SamplingParams>& params, bool progress,
                                               const ProgressCallback& on_step) {
  Impl& m = *impl_;
  std::vector<RequestOutput> results(prompts.size());
  if (params.size() != prompts.size()) {
    for (auto& r : results) r.error = "generate: one SamplingParams per prompt expected";
    return results;
  }
  const tokenizer::Tokenizer* tok = m.tokenizer.get();
  EngineFrontend& frontend = *m.frontend;
  std::vector<std::shared_ptr<RequestStream>> streams(prompts.size());
  const double arrival = now_seconds();
  int64_t in_tokens = 0;
  size_t finished_prompts = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    RequestOutput& res = results[i];
    res.prompt = prompts[i].text;
    res.metrics.arrival_time = arrival;
    // The input side the server does from JSON: text to ids, bad words to ids.
    Status st;
    if (prompts[i].text) {
      auto ids = tok == nullptr ? Result<std::vector<int32_t>>(Status::error("text prompts need a tokenizer: " +
                                                                             m.tokenizer_error))
                                : tok->encode(*prompts[i].text, /*add_special_tokens=*/true);
      if (ids.ok()) res.prompt_token_ids = std::move(*ids);
      st = ids.status();
    } else {
      res.prompt_token_ids = prompts[i].token_ids;
    }
    SamplingParams p = params[i];
    if (st.ok() && !p.bad_words.empty()) {
      st = tok == nullptr ? Status::error("bad_words need a tokenizer: " + m.tokenizer_error) : resolve_bad_words(&p, *tok);
    }
    if (st.ok()) st = frontend.validate(res.prompt_token_ids, p);
    if (!st.ok()) {
      res.error = st.message();
      ++finished_prompts;
      continue;
    }
    streams[i] = std::make_shared<RequestStream>(m.next_request++, nullptr);
    res.request_id = std::to_string(streams[i]->id());
    res.outputs.resize(static_cast<size_t>(p.n));
    for (int64_t c = 0; c < p.n; ++c) res.outputs[static_cast<size_t>(c)].index = c;
    frontend.add(streams[i], GenerateRequest{res.prompt_token_ids, p, 0, nullptr}, arrival);
    in_tokens += static_cast<int64_t>(res.prompt_token_ids.size());
  }

  ProgressBar bar(prompts.size(), progress && !m.args.disable_progress_bar && prompts.size() > 1);
  int64_t out_tokens = 0;
  auto collect = [&] {
    for (size_t i = 0; i < prompts.size(); ++i) {
      if (!streams[i]) continue;
      StreamBatch b = streams[i]->take();
      for (const CompletionDelta& d : b.deltas) out_tokens += static_cast<int64_t>(d.token_ids.size());
      append_to_output(std::move(b), &results[i]);
      if (results[i].finished) {
        streams[i].reset();
        ++finished_prompts;
      }
    }
  };
  bool aborted = false;
  while (frontend.has_work()) {
    frontend.step();
    const EngineStats es = m.engine->stats();
    m.stats.peak_kv_blocks_used = std::max<int64_t>(m.stats.peak_kv_blocks_used,
                                                    static_cast<int64_t>(es.kv_cache_usage * m.stats.num_kv_blocks + 0.5));
    collect();
    bar.update(finished_prompts, in_tokens, out_tokens, false);
    if (on_step && !aborted && !on_step(finished_prompts)) {
      // The aborted requests finish on the next turns, their blocks freed: the engine is
      // idle again when this returns.
      for (const auto& s : streams) {
        if (s) frontend.abort(s->id());
      }
      aborted = true;
    }
  }
  collect();
  bar.update(finished_prompts, in_tokens, out_tokens, true);
  return results;
}

}  // namespace tessera
