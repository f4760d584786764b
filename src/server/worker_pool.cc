#include "server/worker_pool.h"

#include <algorithm>

#include <malloc.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace tessera::server {

WorkerPool::WorkerPool(std::string name, int threads, size_t max_pending, int nice,
                       std::chrono::milliseconds trim_every)
    : name_(std::move(name)), max_pending_(max_pending), ctx_(threads), trim_every_(trim_every) {
  work_.emplace(ctx_.get_executor());
  if (trim_every_.count() > 0) {
    trim_timer_.emplace(ctx_);
    schedule_trim();
  }
  for (int i = 0; i < std::max(1, threads); ++i) {
    threads_.emplace_back([this, nice] {
      // Linux nices threads one by one (a thread id is a PRIO_PROCESS id).
      if (nice != 0) setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), nice);
      ctx_.run();
    });
  }
}

void WorkerPool::schedule_trim() {
  trim_timer_->expires_after(trim_every_);
  trim_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
#ifdef __GLIBC__
    const auto since = std::chrono::steady_clock::now().time_since_epoch() -
                       std::chrono::steady_clock::duration(last_work_.load(std::memory_order_relaxed));
    if (since < 4 * trim_every_) malloc_trim(0);
#endif
    schedule_trim();
  });
}

void WorkerPool::shutdown() {
  if (threads_.empty()) return;
  work_.reset();
  ctx_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace tessera::server
