// EngineFrontend: the engine's side that faces requests, shared by the offline LLM (a
// synchronous driver) and AsyncEngine (a thread): one validation, one n > 1 fan-out into
// child requests (seed + i each; the prompt's logprobs from child 0 only), one step loop
// whose outputs are processed while the next step runs on a device, and one output path:
// each child's tokens become completion deltas (incremental detokenization, stop strings)
// handed to the request's RequestStream, with the serving metrics. vLLM's input processor,
// output processor and parent request, in one place.
//
// Every method but validate(), metrics() and the counters runs on the thread that steps the
// engine.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/engine_core.h"
#include "engine/engine_metrics.h"
#include "engine/output_processor.h"
#include "engine/request_stream.h"
#include "structured/structured_outputs.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

struct GenerateRequest {
  std::vector<int32_t> prompt_token_ids;
  SamplingParams params;
  int32_t priority = 0;           // lower runs first
  std::function<void()> notify;   // called on the engine thread when the stream has news
};

class EngineFrontend {
 public:
  // tok may be null (token ids only, no text).
  EngineFrontend(EngineCoreBase& core, const tokenizer::Tokenizer* tok);
  ~EngineFrontend();
  EngineFrontend(const EngineFrontend&) = delete;
  EngineFrontend& operator=(const EngineFrontend&) = delete;

  // The checks a request gets, the same text offline and in the server. Thread-safe.
  Status validate(const std::vector<int32_t>& prompt_token_ids, const SamplingParams& params) const;

  // A request counted as unfinished before it reaches add() (a queue in between). Thread-safe.
  void count_incoming(const SamplingParams& params);
  // Queues the request's children. One that fails validation ends its stream with the error
  // (finished, no deltas). Counts it unless count_incoming did.
  void add(std::shared_ptr<RequestStream> stream, GenerateRequest request, double arrival_time,
           bool counted = false);
  // Finishes the stream's completions with "abort" and frees their blocks before the next
  // step; unknown or finished ids are ignored.
  void abort(uint64_t stream_id);
  void abort_all();

  // One turn of the loop: launches the next step when the engine has work, and hands out
  // the outputs of the step before while it runs (a host engine computes in launch, so its
  // outputs go out at once). A child that a stop string ends stops at once; the engine drops
  // its results of steps in flight.
  void step();
  // Whether step() has anything to do: requests or steps in the engine, or outputs held.
  bool has_work() const { return core_.has_unfinished() || !held_.empty(); }

  // Requests added and not finished yet; their sequences (n each). Thread-safe.
  size_t num_unfinished() const { return num_unfinished_.load(std::memory_order_relaxed); }
  size_t num_unfinished_seqs() const { return num_unfinished_seqs_.load(std::memory_order_relaxed); }
  EngineMetrics metrics() const;  // thread-safe
  int32_t max_model_len() const { return max_model_len_; }
  int64_t vocab_size() const { return vocab_size_; }
  EngineCoreBase& core() { return core_; }

 private:
  struct Parent;
  // Prompt positions finished in a step: logprobs and the prompt tokens' ranks.
  struct PromptLogprobs {
    std::vector<PositionLogprobs> logprobs;
    std::vector<int32_t> ranks;
  };
  void process(const std::vector<EngineStepOutput>& outputs);
  // The child ended: its final delta and metrics (the stream ends in publish()).
  void finish_child(Parent& a, size_t child, RequestStatus status, CompletionDelta* d);
  // Hands a step's news to the stream, with its end once every child has finished.
  void publish(Parent& a, std::vector<CompletionDelta>* deltas, PromptLogprobs* prompt_logprobs);
  void uncount(size_t num_seqs);
  // params.structured_outputs compiled (or from the cache). Thread-safe.
  Result<std::shared_ptr<const structured::CompiledGrammar>> compile_grammar(const SamplingParams& params) const;

  EngineCoreBase& core_;
  const tokenizer::Tokenizer* tok_;
  // Structured outputs' grammars over tok_'s vocabulary (null without a tokenizer).
  std::unique_ptr<structured::StructuredOutputs> structured_;
  const int32_t max_model_len_;
  const int64_t vocab_size_;

  std::atomic<size_t> num_unfinished_{0};
  std::atomic<size_t> num_unfinished_seqs_{0};
  mutable std::mutex metrics_mu_;
  EngineMetrics metrics_;

  std::unordered_map<uint64_t, std::unique_ptr<Parent>> parents_;  // by stream id
  std::unordered_map<RequestId, std::pair<Parent*, size_t>> child_of_;
  uint64_t next_request_ = 1;
  std::vector<EngineStepOutput> held_;  // the last step's outputs, processed while the next runs
};

}  // namespace tessera
