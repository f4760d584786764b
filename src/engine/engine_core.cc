#include "engine/engine_core.h"

#include "common/check.h"
#include "engine/request_validation.h"
#include "exec/cpu_model_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>

namespace tessera {

Result<std::unique_ptr<EngineCore>> EngineCore::create(const ModelConfig& model_config, const EngineConfig& config,
                                                      const RunnerFactory& make_runner) {
  auto plan = plan_kv_cache(config, model_config);
  if (!plan.ok()) return plan.status();
  auto runner = make_runner(*plan);
  if (!runner.ok()) return runner.status();
  auto core = std::unique_ptr<EngineCore>(new EngineCore(model_config, config, *plan));
  core->runner_ = std::move(*runner);
  return core;
}

Result<std::unique_ptr<EngineCore>> EngineCore::create(Model& model, const EngineConfig& asked) {
  EngineConfig config = asked;
  if (!config.cache.kv_dtype) config.cache.kv_dtype = model.auto_kv_dtype();
  return create(model.config(), config, [&](const KvCachePlan& plan) -> Result<std::unique_ptr<ModelRunner>> {
    try {  // the KV cache's memory is reserved here, and may not be there
      return std::unique_ptr<ModelRunner>(
          std::make_unique<CpuModelRunner>(model, plan.shape, plan.num_host_blocks, config.scheduler.max_num_seqs));
    } catch (const std::exception& e) {
      return Status::error(e.what());
    }
  });
}

EngineCore::EngineCore(const ModelConfig& model_config, const EngineConfig& config, const KvCachePlan& plan)
    : model_config_(model_config), config_(config), plan_(plan),
      seed_source_(config.seed.value_or(std::random_device{}())) {
  kv_ = std::make_unique<KvCacheManager>(static_cast<int32_t>(plan.shape.num_blocks), config.cache.block_size,
                                         config.cache.enable_prefix_caching, plan.num_host_blocks);
  for (int64_t id : model_config.eos_token_ids) eos_token_ids_.push_back(static_cast<int32_t>(id));
  scheduler_ = std::make_unique<Scheduler>(config.scheduler, *kv_, eos_token_ids_);
  profile_.enabled = config.profiling.engine;
}

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

EngineCore::~EngineCore() {
  const StepProfile& p = profile_;
  if (!p.enabled || p.steps == 0) return;
  const double n = static_cast<double>(p.steps);
  std::fprintf(stderr,
               "tessera: engine profile, %lld steps; per step: schedule %.3f ms, runner (launch, collect, host "
               "sampling) %.3f ms, update %.3f ms, between steps %.3f ms, caller's work while a step runs %.3f ms\n",
               static_cast<long long>(p.steps), p.schedule_ms / n, p.execute_ms / n, p.update_ms / n,
               p.steps > 1 ? p.between_ms / (n - 1) : 0.0, p.overlap_ms / n);
}

Status EngineCore::add_request(std::unique_ptr<Request> r) {
  if (Status s = validate_request(r->prompt_token_ids, r->params,
                                  RequestLimits{model_config_.vocab_size, config_.scheduler.max_model_len});
      !s.ok()) {
    return s;
  }
  if (scheduler_->request(r->id) != nullptr) return Status::error("duplicate request id");
  const uint64_t seed = r->params.seed.value_or(seed_source_());
  r->sampling_seed = seed;
  scheduler_->add_request(std::move(r));
  return Status();
}

bool EngineCore::abort_request(RequestId id) {
  return scheduler_->finish_request(id, RequestStatus::kFinishedAborted);
}

bool EngineCore::stop_request(RequestId id) {
  return scheduler_->finish_request(id, RequestStatus::kFinishedStopped);
}

std::unique_ptr<Request> EngineCore::take_finished(RequestId id) { return scheduler_->take_finished(id); }

EngineStats EngineCore::stats() const {
  EngineStats s;
  s.num_running = scheduler_->num_running();
  s.num_waiting = scheduler_->num_waiting();
  s.kv_cache_usage = kv_->usage();
  s.num_preemptions = scheduler_->num_preemptions();
  s.prefix_cache_queries = kv_->prefix_cache_queries();
  s.prefix_cache_hits = kv_->prefix_cache_hits();
  s.kv_offload_stores = kv_->offload_stores();
  s.kv_offload_loads = kv_->offload_loads();
  return s;
}

std::vector<EngineStepOutput> EngineCore::step() {
  if (!launch_step()) return {};
  return finish_step();
}

bool EngineCore::launch_step() {
  if (in_flight_.empty()) launch(/*look_ahead=*/false);
  return !in_flight_.empty();
}

void EngineCore::launch(bool look_ahead) {
  const double t0 = profile_.enabled ? now_ms() : 0.0;
  SchedulerOutput out = scheduler_->schedule(look_ahead);
  look_ahead_stalled_ = out.look_ahead_stalled;
  if (out.empty()) return;
  const double t1 = profile_.enabled ? now_ms() : 0.0;
  runner_->launch(out, [this](RequestId id) { return scheduler_->request(id); });
  if (profile_.enabled) {
    if (profile_.last_end_ms >= 0 && !look_ahead) profile_.between_ms += t0 - profile_.last_end_ms;
    profile_.schedule_ms += t1 - t0;
    profile_.launch_end_ms = now_ms();
    profile_.execute_ms += profile_.launch_end_ms - t1;
  }
  in_flight_.push_back(std::move(out));
}

std::vector<EngineStepOutput> EngineCore::finish_step() {
  std::vector<EngineStepOutput> outputs;
  if (in_flight_.empty()) return outputs;
  // Async scheduling: the next step goes to the device before this one's tokens come back,
  // when they stay there for it. After a stalled look-ahead, the next step waits (and may
  // preempt).
  const double t0 = profile_.enabled ? now_ms() : 0.0;
  if (profile_.enabled) profile_.overlap_ms += t0 - profile_.launch_end_ms;
  if (in_flight_.size() == 1 && config_.scheduler.async_scheduling && !look_ahead_stalled_ && runner_->launches_async() &&
      runner_->tokens_stay_on_device()) {
    launch(/*look_ahead=*/true);
  } else {
    look_ahead_stalled_ = false;
  }
  const SchedulerOutput out = std::move(in_flight_.front());
  in_flight_.pop_front();
  const double t1 = profile_.enabled ? now_ms() : 0.0;
  const ModelRunner::RequestLookup lookup = [this](RequestId id) { return scheduler_->request(id); };
  std::vector<RequestStepOutput> results_of;
  runner_->collect(lookup, &results_of);
  const double t2 = profile_.enabled ? now_ms() : 0.0;

  std::vector<int32_t> sampled;
  std::vector<EngineStepOutput> pending;  // one per sampling request, in schedule order
  // What each sampling request adds to the step's token count (vllm:iteration_tokens_total):
  // its new token, and with a request's first token the prompt tokens it computed.
  std::vector<int32_t> counted;
  for (size_t i = 0; i < out.requests.size(); ++i) {
    const ScheduledRequest& s = out.requests[i];
    const Request* r = scheduler_->request(s.id);
    RequestStepOutput& ro = results_of[i];
    EngineStepOutput o;
    o.id = s.id;
    if (r == nullptr || r->status != RequestStatus::kRunning) {  // finished while the step ran
      if (s.samples) {
        sampled.push_back(-1);  // dropped by update_from_output
        pending.push_back(std::move(o));
      }
      continue;
    }
    o.prompt_logprobs = std::move(ro.prompt_logprobs);
    o.prompt_ranks = std::move(ro.prompt_ranks);
    if (!s.samples) {
      if (!o.prompt_logprobs.empty()) outputs.push_back(std::move(o));
      continue;
    }
    TESSERA_CHECK_MSG(ro.sampled_token >= 0, "a sampling request without a sampled token");
    sampled.push_back(ro.sampled_token);
    counted.resize(sampled.size(), 0);
    counted.back() = 1 + (r->num_output_tokens() == 0 ? r->num_prompt_tokens() - std::max(r->num_cached_tokens, 0) : 0);
    if (ro.logprobs) {
      o.new_logprobs = std::move(ro.logprobs);
      o.new_token_logprob = ro.token_logprob;
    }
    pending.push_back(std::move(o));
  }
  const std::vector<StepResult> results = scheduler_->update_from_output(out, sampled);
  counted.resize(sampled.size(), 0);
  int32_t step_tokens = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].dropped) continue;
    EngineStepOutput& o = pending[i];
    if (results[i].token >= 0) {
      o.new_token = results[i].token;
      step_tokens += counted[i];
    }
    o.status = results[i].status;
    o.stop_token = results[i].stop_token;
    outputs.push_back(std::move(o));
  }
  // vLLM's count: a step observed when it has outputs; its prompt tokens counted once, in the
  // step that completes the prefill. Bounded if never taken.
  if (!outputs.empty() && step_tokens_.size() < 4096) step_tokens_.push_back(step_tokens);
  if (profile_.enabled) {
    const double t3 = now_ms();
    profile_.execute_ms += t2 - t1;
    profile_.update_ms += t3 - t2;
    profile_.steps += 1;
    profile_.last_end_ms = t3;
  }
  return outputs;
}

}  // namespace tessera
