// Counters and histograms of the serving engine (vLLM's metrics), updated on the engine
// thread and copied out for /metrics.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace tessera {

// A Prometheus-style histogram: counts per upper bound (non-cumulative here), sum, count.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v) {
    const size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
    ++counts_[i];
    sum_ += v;
    ++count_;
  }
  const std::vector<double>& bounds() const { return bounds_; }
  const std::vector<uint64_t>& counts() const { return counts_; }  // last: above every bound
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

struct EngineMetrics {
  // Gauges, refreshed every step.
  int64_t num_requests_running = 0;
  int64_t num_requests_waiting = 0;
  double kv_cache_usage = 0.0;  // 0..1 of the blocks held by requests
  // Counters.
  int64_t num_preemptions = 0;
  int64_t prefix_cache_queries = 0;  // tokens
  int64_t prefix_cache_hits = 0;     // tokens
  int64_t kv_offload_stores = 0;     // blocks copied to host memory
  int64_t kv_offload_loads = 0;      // blocks loaded back from it
  int64_t prompt_tokens = 0;
  int64_t generation_tokens = 0;
  std::array<int64_t, 3> request_success{};  // by finish reason: stop, length, abort
  // Histograms, seconds (vLLM's bucket bounds).
  Histogram time_to_first_token{{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
                                 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}};
  Histogram inter_token_latency{{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
                                 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}};
  Histogram e2e_request_latency{kRequestBuckets()};
  Histogram request_queue_time{kRequestBuckets()};
  // Per finished completion: first schedule to first token, first token to the end, both.
  Histogram request_prefill_time{kRequestBuckets()};
  Histogram request_decode_time{kRequestBuckets()};
  Histogram request_inference_time{kRequestBuckets()};
  // Sizes, in tokens (1-2-5 steps up to the context, as vLLM's), and n.
  Histogram request_prompt_tokens{{}};      // per admitted request
  Histogram request_generation_tokens{{}};  // per finished completion
  Histogram request_params_max_tokens{{}};  // per admitted request
  Histogram request_params_n{{1, 2, 5, 10, 20}};
  // Tokens per engine step (prompt chunks and decodes), vLLM's bounds.
  Histogram iteration_tokens{{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}};

  // Metrics whose token buckets run up to max_model_len.
  explicit EngineMetrics(int64_t max_model_len = 0)
      : request_prompt_tokens(one_two_five(max_model_len)),
        request_generation_tokens(one_two_five(max_model_len)),
        request_params_max_tokens(one_two_five(max_model_len)) {}

  // 1, 2, 5, 10, 20, 50, ... up to at most limit.
  static std::vector<double> one_two_five(int64_t limit) {
    std::vector<double> b;
    for (double decade = 1; decade <= static_cast<double>(limit); decade *= 10) {
      for (double m : {1.0, 2.0, 5.0}) {
        if (m * decade <= static_cast<double>(limit)) b.push_back(m * decade);
      }
    }
    return b;
  }
  static std::vector<double> kRequestBuckets() {
    return {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
            30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
  }
};

}  // namespace tessera
