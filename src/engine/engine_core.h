// EngineCore: the step loop. step() = schedule -> run the model -> sample -> update.
// Requests enter validated; each step reports the new token (and logprobs) of every request
// that sampled, and which requests finished.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

#include "config/engine_config.h"
#include "exec/model_runner.h"
#include "kv/kv_cache_manager.h"
#include "model/model.h"
#include "sched/scheduler.h"
#include "tessera/outputs.h"

namespace tessera {

// What one step produced for one request.
struct EngineStepOutput {
  RequestId id;
  std::optional<int32_t> new_token;             // absent: no token this step (abort)
  std::optional<PositionLogprobs> new_logprobs;  // when the request asked for logprobs
  float new_token_logprob = 0.0f;               // raw logprob of new_token (with logprobs)
  std::vector<PositionLogprobs> prompt_logprobs;  // prompt positions finished this step
  std::vector<int32_t> prompt_ranks;  // each one's prompt token rank (1: the most likely)
  RequestStatus status = RequestStatus::kRunning;
  bool stop_token = false;  // new_token is the EOS or stop token that finished it (not in the text)
};

struct EngineStats {
  size_t num_running = 0;
  size_t num_waiting = 0;
  double kv_cache_usage = 0.0;
  int64_t num_preemptions = 0;
  int64_t prefix_cache_queries = 0;
  int64_t prefix_cache_hits = 0;
  int64_t kv_offload_stores = 0;  // blocks copied to the host tier
  int64_t kv_offload_loads = 0;   // blocks loaded back from it
};

// The step loop as the layers above see it (AsyncEngine, tests); EngineCore runs a model,
// FakeEngineCore only emits tokens (to measure everything around the model).
class EngineCoreBase {
 public:
  virtual ~EngineCoreBase() = default;
  // Checks the request against the model and the limits (token ids in range, prompt shorter
  // than max_model_len, sampling parameters) and queues it. Its id must be new.
  virtual Status add_request(std::unique_ptr<Request> request) = 0;
  // Aborts now: frees its blocks; it reports nothing more. False when unknown or finished.
  // Any time, steps in flight included: their results for it are dropped.
  virtual bool abort_request(RequestId id) = 0;
  // Finishes a request for a stop string the caller found (frees its blocks); any time, as
  // abort_request.
  virtual bool stop_request(RequestId id) = 0;
  virtual std::vector<EngineStepOutput> step() = 0;
  // step() in two halves, so that the caller's work (its outputs of the step before) overlaps
  // the device's: launch_step schedules a step and queues it (false when there was nothing
  // to run; true when a step is in flight already), finish_step waits for the oldest step
  // and returns what step() would. An engine may launch the next step inside finish_step,
  // before it waits (async scheduling), so a step can be in flight after it returns. By
  // default the whole step runs in launch_step.
  virtual bool launch_step() {
    launched_ = step();
    return true;
  }
  virtual std::vector<EngineStepOutput> finish_step() { return std::move(launched_); }
  // Whether launch_step returns while the step computes (else work between the halves only
  // delays the step's outputs).
  virtual bool launches_async() const { return false; }
  // Requests to run, or a step in flight.
  virtual bool has_unfinished() const = 0;
  // A finished request, handed back once.
  virtual std::unique_ptr<Request> take_finished(RequestId id) = 0;
  virtual EngineStats stats() const = 0;
  // Per step finished since the last call that had outputs, as vLLM counts for the
  // iteration-tokens metric: the tokens generated, plus the computed prompt tokens (prefix
  // hits aside) of requests whose prefill completed in it. Empty for engines that do not count.
  virtual std::vector<int32_t> take_step_tokens() { return {}; }
  virtual int32_t max_model_len() const = 0;
  virtual int64_t vocab_size() const = 0;
  // The tokens that end a request (EOS), which a finished grammar allows.
  virtual std::vector<int32_t> eos_token_ids() const = 0;

 private:
  std::vector<EngineStepOutput> launched_;  // the default launch_step's outputs
};

class EngineCore : public EngineCoreBase {
 public:
  // Makes the backend's runner once the KV cache is planned.
  using RunnerFactory = std::function<Result<std::unique_ptr<ModelRunner>>(const KvCachePlan&)>;
  static Result<std::unique_ptr<EngineCore>> create(const ModelConfig& model_config, const EngineConfig& config,
                                                    const RunnerFactory& make_runner);
  // On the CPU: a CpuModelRunner over `model`, which must outlive the engine.
  static Result<std::unique_ptr<EngineCore>> create(Model& model, const EngineConfig& config);
  ~EngineCore() override;

  const KvCachePlan& plan() const { return plan_; }
  const EngineConfig& config() const { return config_; }
  const ModelConfig& model_config() const { return model_config_; }

  Status add_request(std::unique_ptr<Request> request) override;
  bool abort_request(RequestId id) override;
  bool stop_request(RequestId id) override;
  std::vector<EngineStepOutput> step() override;
  bool launch_step() override;
  std::vector<EngineStepOutput> finish_step() override;
  bool launches_async() const override { return runner_->launches_async(); }
  bool has_unfinished() const override { return scheduler_->has_unfinished() || !in_flight_.empty(); }
  std::unique_ptr<Request> take_finished(RequestId id) override;
  EngineStats stats() const override;
  int32_t max_model_len() const override { return config_.scheduler.max_model_len; }
  std::vector<int32_t> take_step_tokens() override { return std::exchange(step_tokens_, {}); }
  int64_t vocab_size() const override { return model_config_.vocab_size; }
  std::vector<int32_t> eos_token_ids() const override { return eos_token_ids_; }

 private:
  EngineCore(const ModelConfig& model_config, const EngineConfig& config, const KvCachePlan& plan);

  ModelConfig model_config_;
  EngineConfig config_;
  KvCachePlan plan_;
  std::unique_ptr<KvCacheManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ModelRunner> runner_;
  std::vector<int32_t> eos_token_ids_;
  std::mt19937_64 seed_source_;
  // Launched steps, oldest first: one, or two while a look-ahead step runs behind.
  std::deque<SchedulerOutput> in_flight_;
  std::vector<int32_t> step_tokens_;  // per finished step with outputs since the last take_step_tokens
  bool look_ahead_stalled_ = false;  // the last look-ahead ran out of blocks: next step without
  // Schedules and queues a step (look_ahead: behind the one in flight).
  void launch(bool look_ahead);

  // --profile engine: where each step's host time goes (printed when the engine
  // ends): scheduling, the runner, sampling and the scheduler's update, the time between
  // steps (the caller's work outside a step) and between launch_step and finish_step (the
  // caller's work while the step runs).
  struct StepProfile {
    bool enabled = false;
    int64_t steps = 0;
    double schedule_ms = 0, execute_ms = 0, update_ms = 0, between_ms = 0, overlap_ms = 0;
    double last_end_ms = -1, launch_end_ms = 0;
  };
  StepProfile profile_;
};

}  // namespace tessera
