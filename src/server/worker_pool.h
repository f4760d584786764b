// WorkerPool: the CPU work of requests (JSON parsing, chat template rendering,
// tokenization, building large responses) runs here, so the HTTP threads only do I/O and a
// request that takes seconds of CPU cannot stall /health or other clients' streams. The
// queue is bounded: past max_pending tasks a request gets 503 instead of waiting.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "server/openai_protocol.h"

namespace tessera::server {

class WorkerPool {
 public:
  WorkerPool(int threads, size_t max_pending) : pool_(static_cast<size_t>(threads)), max_pending_(max_pending) {}
  ~WorkerPool() { shutdown(); }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Runs fn() on a worker; the awaiting coroutine resumes on its own executor with fn's
  // result, or fn's exception rethrown. The caller stays suspended meanwhile, so fn may
  // hold references to the caller's locals. Throws a 503 ApiError when the queue is full.
  template <class F>
  boost::asio::awaitable<std::invoke_result_t<F&>> run(F fn) {
    using R = std::invoke_result_t<F&>;
    if (pending_.fetch_add(1) >= max_pending_) {
      pending_.fetch_sub(1);
      throw ApiError(boost::beast::http::status::service_unavailable,
                     "the server is busy: " + std::to_string(max_pending_) + " requests are being prepared; retry later");
    }
    struct Release {
      std::atomic<size_t>& n;
      ~Release() { n.fetch_sub(1); }
    } release{pending_};
    co_return co_await boost::asio::co_spawn(
        pool_.get_executor(), [f = std::move(fn)]() mutable -> boost::asio::awaitable<R> { co_return f(); },
        boost::asio::use_awaitable);
  }

  // Tasks queued or running now.
  size_t pending() const { return pending_.load(); }
  // Drops queued tasks and joins the threads (before the io_context the callers run on
  // goes away: a finishing task posts its completion there).
  void shutdown() {
    pool_.stop();
    pool_.join();
  }

 private:
  boost::asio::thread_pool pool_;
  const size_t max_pending_;
  std::atomic<size_t> pending_{0};
};

}  // namespace tessera::server
