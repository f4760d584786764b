#include "engine/fake_engine_core.h"
#include "engine/request_validation.h"

#include <algorithm>
#include <thread>

namespace tessera {

FakeEngineCore::FakeEngineCore(int64_t vocab_size, int32_t max_model_len, int32_t max_num_seqs,
                               std::vector<int32_t> eos_token_ids, double step_interval)
    : vocab_size_(vocab_size), max_model_len_(max_model_len), max_num_seqs_(max_num_seqs),
      eos_token_ids_(std::move(eos_token_ids)), step_interval_(step_interval) {}

Status FakeEngineCore::add_request(std::unique_ptr<Request> r) {
  if (Status s = validate_request(r->prompt_token_ids, r->params, RequestLimits{vocab_size_, max_model_len_}); !s.ok()) {
    return s;
  }
  if (requests_.count(r->id) != 0) return Status::error("duplicate request id");
  waiting_.push_back(r.get());
  requests_.emplace(r->id, std::move(r));
  return Status();
}

bool FakeEngineCore::finish(RequestId id, RequestStatus status) {
  auto it = requests_.find(id);
  if (it == requests_.end() || is_finished(it->second->status)) return false;
  Request* r = it->second.get();
  r->status = status;
  std::erase(running_, r);
  std::erase(waiting_, r);
  return true;
}

bool FakeEngineCore::abort_request(RequestId id) { return finish(id, RequestStatus::kFinishedAborted); }
bool FakeEngineCore::stop_request(RequestId id) { return finish(id, RequestStatus::kFinishedStopped); }

std::unique_ptr<Request> FakeEngineCore::take_finished(RequestId id) {
  auto it = requests_.find(id);
  if (it == requests_.end() || !is_finished(it->second->status)) return nullptr;
  std::unique_ptr<Request> r = std::move(it->second);
  requests_.erase(it);
  return r;
}

EngineStats FakeEngineCore::stats() const {
  EngineStats s;
  s.num_running = running_.size();
  s.num_waiting = waiting_.size();
  return s;
}

std::vector<EngineStepOutput> FakeEngineCore::step() {
  if (step_interval_ > 0.0) {
    std::this_thread::sleep_until(next_step_);
    next_step_ = std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(step_interval_));
  }
  while (!waiting_.empty() && static_cast<int32_t>(running_.size()) < max_num_seqs_) {
    Request* r = waiting_.front();
    waiting_.pop_front();
    r->status = RequestStatus::kRunning;
    r->num_cached_tokens = 0;
    r->first_scheduled_time = r->arrival_time;
    running_.push_back(r);
  }
  std::vector<EngineStepOutput> outputs;
  outputs.reserve(running_.size());
  for (Request* r : running_) {
    const SamplingParams& p = r->params;
    const int32_t token = r->prompt_token_ids[r->output_token_ids.size() % r->prompt_token_ids.size()];
    r->append_output_token(token);
    EngineStepOutput o;
    o.id = r->id;
    o.new_token = token;
    if (p.logprobs > 0) o.new_logprobs = PositionLogprobs{{token, 0.0f}};
    const bool past_min = r->num_output_tokens() > p.min_tokens;
    const bool eos = !p.ignore_eos && std::find(eos_token_ids_.begin(), eos_token_ids_.end(), token) != eos_token_ids_.end();
    const bool stop_id = std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), token) != p.stop_token_ids.end();
    if (past_min && (eos || stop_id)) {
      r->status = RequestStatus::kFinishedStopped;
      r->stop_reason = token;
    } else if (r->num_output_tokens() >= p.max_tokens || r->num_tokens() >= max_model_len_) {
      r->status = RequestStatus::kFinishedLength;
    }
    o.status = r->status;
    outputs.push_back(std::move(o));
  }
  std::erase_if(running_, [](const Request* r) { return is_finished(r->status); });
  return outputs;
}

}  // namespace tessera
