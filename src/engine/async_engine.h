// AsyncEngine: the engine on its own thread, for servers. Callers on any thread add
// requests and get a RequestStream back; the engine thread takes new requests and aborts
// between steps (so an abort frees its blocks before the next step is scheduled), steps, and pushes
// each completion's new tokens and text to its stream while the next step runs
// (EngineCoreBase::launch_step / finish_step). n > 1 runs n child requests that share
// the prompt's KV blocks through the prefix cache.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/engine_core.h"
#include "engine/engine_metrics.h"
#include "engine/output_processor.h"
#include "engine/request_stream.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

struct GenerateRequest {
  std::vector<int32_t> prompt_token_ids;
  SamplingParams params;
  int32_t priority = 0;           // lower runs first
  std::function<void()> notify;   // called on the engine thread when the stream has news
};

class AsyncEngine {
 public:
  // tok may be null (token ids only). Starts the engine thread.
  AsyncEngine(std::unique_ptr<EngineCoreBase> core, const tokenizer::Tokenizer* tok);
  ~AsyncEngine();  // aborts what is left and joins the thread
  AsyncEngine(const AsyncEngine&) = delete;
  AsyncEngine& operator=(const AsyncEngine&) = delete;

  // The checks add_request's engine side makes, on the caller's thread, so a server can
  // answer 400 before it starts a stream. Thread-safe.
  Status validate(const std::vector<int32_t>& prompt_token_ids, const SamplingParams& params) const;
  // Queues the request (checked by validate() first). Thread-safe, never waits for a step.
  std::shared_ptr<RequestStream> add_request(GenerateRequest request);
  // Finishes the stream's completions with "abort" and frees their blocks before the next
  // step. Thread-safe; unknown or finished ids are ignored.
  void abort(uint64_t stream_id);
  void abort_all();

  // Streams added and not finished yet.
  size_t num_unfinished() const { return num_unfinished_.load(std::memory_order_relaxed); }
  // Their sequences: a stream of n completions counts n.
  size_t num_unfinished_seqs() const { return num_unfinished_seqs_.load(std::memory_order_relaxed); }
  EngineMetrics metrics() const;
  int32_t max_model_len() const { return max_model_len_; }
  int64_t vocab_size() const { return vocab_size_; }

 private:
  struct Active;
  struct Incoming {
    std::shared_ptr<RequestStream> stream;
    GenerateRequest request;
    double arrival_time;
  };

  void loop();
  void admit(Incoming in);
  void abort_now(uint64_t stream_id);
  // A step's outputs, while the next step may be running: a child that a stop string ends
  // is stopped at once (the engine drops its results of steps in flight).
  void process(const std::vector<EngineStepOutput>& outputs);
  // The child ended: its final delta and metrics (the stream ends in publish()).
  void finish_child(Active& a, size_t child, RequestStatus status, CompletionDelta* d);
  // Hands a step's news to the stream, with its end once every child has finished.
  // Prompt positions finished in a step: logprobs and the prompt tokens' ranks.
  struct PromptLogprobs {
    std::vector<PositionLogprobs> logprobs;
    std::vector<int32_t> ranks;
  };
  void publish(Active& a, std::vector<CompletionDelta>* deltas, PromptLogprobs* prompt_logprobs);

  std::unique_ptr<EngineCoreBase> core_;
  const tokenizer::Tokenizer* tok_;
  const int32_t max_model_len_;
  const int64_t vocab_size_;

  mutable std::mutex mu_;  // guards the queues below and stop_
  std::condition_variable cv_;
  std::vector<Incoming> incoming_;
  std::vector<uint64_t> aborts_;
  bool abort_all_ = false;
  bool stop_ = false;
  std::atomic<uint64_t> next_stream_{1};
  std::atomic<size_t> num_unfinished_{0};
  std::atomic<size_t> num_unfinished_seqs_{0};

  mutable std::mutex metrics_mu_;
  EngineMetrics metrics_;

  // Engine thread only.
  std::unordered_map<uint64_t, std::unique_ptr<Active>> active_;
  std::unordered_map<RequestId, std::pair<Active*, size_t>> child_of_;
  uint64_t next_request_ = 1;

  std::thread thread_;
};

}  // namespace tessera
