// WorkerPool: the CPU work of requests (JSON parsing, chat template rendering,
// tokenization, building large responses) runs here, so the HTTP threads only do I/O and a
// request that takes seconds of CPU cannot stall /health or other clients' streams. The
// queue is bounded: past max_pending tasks a request gets 503 instead of waiting. A pool
// for heavy work runs its threads at a lower CPU priority (nice), so they take the cores
// the engine and the light work leave.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without it
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "server/openai_protocol.h"

namespace tessera::server {

class WorkerPool {
 public:
  // nice: the threads' niceness (0: as the process; higher: yield the CPU to others).
  // trim_every > 0: that often, while work ran in the last few periods (its replies are freed
  // after they are written), hand the heap's free pages back to the system: large inputs and
  // replies leave megabytes that glibc keeps otherwise.
  WorkerPool(std::string name, int threads, size_t max_pending, int nice = 0,
             std::chrono::milliseconds trim_every = std::chrono::milliseconds(0));
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
                     "the server is busy: " + std::to_string(max_pending_) + " requests wait for its " + name_ +
                         " workers; retry later");
    }
    struct Release {
      std::atomic<size_t>& n;
      ~Release() { n.fetch_sub(1); }
    } release{pending_};
    last_work_.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    co_return co_await boost::asio::co_spawn(
        ctx_.get_executor(), [f = std::move(fn)]() mutable -> boost::asio::awaitable<R> { co_return f(); },
        boost::asio::use_awaitable);
  }

  // Tasks queued or running now.
  size_t pending() const { return pending_.load(); }
  // Drops queued tasks and joins the threads (before the io_context the callers run on
  // goes away: a finishing task posts its completion there).
  void shutdown();

 private:
  void schedule_trim();

  const std::string name_;
  const size_t max_pending_;
  std::atomic<size_t> pending_{0};
  boost::asio::io_context ctx_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  std::chrono::milliseconds trim_every_;
  std::optional<boost::asio::steady_timer> trim_timer_;
  std::atomic<int64_t> last_work_{0};  // steady_clock ticks at the last task's start
};

}  // namespace tessera::server
