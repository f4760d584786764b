// FakeEngineCore: the engine loop without a model. Every running request gets one token per
// step, as fast as step() is called, so benchmarks measure what surrounds the model (queues,
// detokenization, HTTP streaming). Request i's k-th output token is its prompt token
// k mod prompt length: the streamed text is the prompt, repeated.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/engine_core.h"

namespace tessera {

class FakeEngineCore : public EngineCoreBase {
 public:
  // step_interval > 0 paces the steps (at most one per step_interval seconds), so a
  // benchmark can hold many streams open at a token rate the machine sustains.
  FakeEngineCore(int64_t vocab_size, int32_t max_model_len, int32_t max_num_seqs,
                 std::vector<int32_t> eos_token_ids, double step_interval = 0.0);

  Status add_request(std::unique_ptr<Request> request) override;
  bool abort_request(RequestId id) override;
  bool stop_request(RequestId id) override;
  std::vector<EngineStepOutput> step() override;
  bool has_unfinished() const override { return !running_.empty() || !waiting_.empty(); }
  std::unique_ptr<Request> take_finished(RequestId id) override;
  EngineStats stats() const override;
  int32_t max_model_len() const override { return max_model_len_; }
  int64_t vocab_size() const override { return vocab_size_; }
  std::vector<int32_t> eos_token_ids() const override { return eos_token_ids_; }

 private:
  bool finish(RequestId id, RequestStatus status);

  int64_t vocab_size_;
  int32_t max_model_len_;
  int32_t max_num_seqs_;
  std::vector<int32_t> eos_token_ids_;
  double step_interval_;
  std::chrono::steady_clock::time_point next_step_{};
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;
};

}  // namespace tessera
