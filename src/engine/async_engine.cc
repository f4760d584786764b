#include "engine/async_engine.h"

#include <chrono>

namespace tessera {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

AsyncEngine::AsyncEngine(std::unique_ptr<EngineCoreBase> core, const tokenizer::Tokenizer* tok)
    : core_(std::move(core)), frontend_(*core_, tok) {
  thread_ = std::thread([this] { loop(); });
}

AsyncEngine::~AsyncEngine() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

std::shared_ptr<RequestStream> AsyncEngine::add_request(GenerateRequest request) {
  auto stream = std::make_shared<RequestStream>(next_stream_++, std::move(request.notify));
  frontend_.count_incoming(request.params);
  {
    std::lock_guard lock(mu_);
    incoming_.push_back(Incoming{stream, std::move(request), now_seconds()});
  }
  cv_.notify_one();
  return stream;
}

void AsyncEngine::abort(uint64_t stream_id) {
  {
    std::lock_guard lock(mu_);
    aborts_.push_back(stream_id);
  }
  cv_.notify_one();
}

void AsyncEngine::abort_all() {
  {
    std::lock_guard lock(mu_);
    abort_all_ = true;
  }
  cv_.notify_one();
}

void AsyncEngine::loop() {
  for (;;) {
    std::vector<Incoming> incoming;
    std::vector<uint64_t> aborts;
    bool abort_everything = false;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] {
        return stop_ || abort_all_ || !incoming_.empty() || !aborts_.empty() || frontend_.has_work();
      });
      incoming.swap(incoming_);
      aborts.swap(aborts_);
      abort_everything = abort_all_ || stop_;
      abort_all_ = false;
    }
    for (Incoming& in : incoming) {
      frontend_.add(std::move(in.stream), std::move(in.request), in.arrival_time, /*counted=*/true);
    }
    for (uint64_t id : aborts) frontend_.abort(id);
    if (abort_everything) {
      frontend_.abort_all();
      std::lock_guard lock(mu_);
      if (stop_) return;
    }
    frontend_.step();
  }
}

}  // namespace tessera
