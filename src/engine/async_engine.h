// AsyncEngine: the engine on its own thread, for servers. Callers on any thread add
// requests and get a RequestStream back; the engine thread takes new requests and aborts
// between steps (so an abort frees its blocks before the next step is scheduled) and runs
// the EngineFrontend's step loop, which pushes each completion's news to its stream while
// the next step runs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/frontend.h"

namespace tessera {

class AsyncEngine {
 public:
  // tok may be null (token ids only). Starts the engine thread.
  AsyncEngine(std::unique_ptr<EngineCoreBase> core, const tokenizer::Tokenizer* tok);
  ~AsyncEngine();  // aborts what is left and joins the thread
  AsyncEngine(const AsyncEngine&) = delete;
  AsyncEngine& operator=(const AsyncEngine&) = delete;

  // The checks the engine makes, on the caller's thread, so a server can answer 400 before
  // it starts a stream. Thread-safe.
  Status validate(const std::vector<int32_t>& prompt_token_ids, const SamplingParams& params) const {
    return frontend_.validate(prompt_token_ids, params);
  }
  // Queues the request (checked by validate() first). Thread-safe, never waits for a step.
  std::shared_ptr<RequestStream> add_request(GenerateRequest request);
  // Finishes the stream's completions with "abort" and frees their blocks before the next
  // step. Thread-safe; unknown or finished ids are ignored.
  void abort(uint64_t stream_id);
  void abort_all();

  // Streams added and not finished yet.
  size_t num_unfinished() const { return frontend_.num_unfinished(); }
  // Their sequences: a stream of n completions counts n.
  size_t num_unfinished_seqs() const { return frontend_.num_unfinished_seqs(); }
  EngineMetrics metrics() const { return frontend_.metrics(); }
  int32_t max_model_len() const { return frontend_.max_model_len(); }
  int64_t vocab_size() const { return frontend_.vocab_size(); }

 private:
  struct Incoming {
    std::shared_ptr<RequestStream> stream;
    GenerateRequest request;
    double arrival_time;
  };

  void loop();

  std::unique_ptr<EngineCoreBase> core_;
  EngineFrontend frontend_;  // engine thread only, but for its thread-safe methods

  mutable std::mutex mu_;  // guards the queues below and stop_
  std::condition_variable cv_;
  std::vector<Incoming> incoming_;
  std::vector<uint64_t> aborts_;
  bool abort_all_ = false;
  bool stop_ = false;
  std::atomic<uint64_t> next_stream_{1};

  std::thread thread_;
};

}  // namespace tessera
