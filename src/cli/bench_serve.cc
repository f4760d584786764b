// `tessera bench serve`: vLLM's online serving benchmark (benchmark_serving.py) against a
// running OpenAI-compatible server. Every request streams; per request it measures TTFT,
// inter-token latency, TPOT and end-to-end latency, then prints vLLM's summary (same
// labels) plus the requests it hung up on by design and the failures by HTTP status.
//
// One io_context on one thread drives every stream. Connections are HTTP/1.1 keep-alive and
// pooled: a request takes an idle one or opens a new one, so the pool grows to the peak
// number of requests in flight and, under --max-concurrency C, to C.
#include <sys/resource.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <utility>  // before Boost 1.74's awaitable.hpp, which needs std::exchange

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>

#include "cli/bench_serve_client.h"
#include "cli/commands.h"

// GCC 12 misreads the matched operator new/delete of Boost 1.74's coroutine frames.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace tessera::cli {
namespace {

namespace asio = boost::asio;
using bench_serve::Clock;
using bench_serve::Outcome;
using bench_serve::StreamResult;
using nlohmann::json;

constexpr int kExitBadArguments = 2;
constexpr auto kProgressInterval = std::chrono::seconds(10);
constexpr size_t kMaxDistinctErrors = 20;

struct ServeOptions {
  std::string base_url = "http://127.0.0.1:8000";
  std::string endpoint = "/v1/completions";
  std::string model;
  std::string dataset = "random";
  int64_t random_input_len = 128;
  int64_t random_output_len = 128;
  double random_range_ratio = 0.0;
  int64_t num_prompts = 1000;
  std::string request_rate = "inf";
  int64_t max_concurrency = 0;  // 0: unlimited
  uint64_t seed = 0;
  std::string api_key;
  double disconnect_prob = 0.0;
  double duration_s = 0.0;  // 0: stop after num_prompts requests
  double request_timeout_s = 600.0;
  std::string output_json;
  bool ignore_eos = false;
  CLI::Option* ignore_eos_option = nullptr;  // to tell "not given" from --no-ignore-eos

  double rate = INFINITY;  // parsed request_rate
  bool chat() const { return endpoint.find("chat/completions") != std::string::npos; }
};

// ---------------------------------------------------------------------------------------
// Workload

struct Prompt {
  json prompt;  // a string, or a list of token ids
  int64_t max_tokens = 0;
};

// One request of the workload, its JSON body ready to send.
struct WorkItem {
  std::string body;
  int64_t prompt_tokens = 0;  // token-id prompts: their length; text: 0 until usage says
  int64_t max_tokens = 0;
};

// Random token ids (vLLM's random dataset, without a tokenizer): lengths spread uniformly
// over len * (1 ± ratio), ids in [1000, 10000), clear of most vocabularies' special tokens.
std::vector<Prompt> random_prompts(const ServeOptions& o) {
  std::mt19937_64 rng(o.seed);
  auto length_around = [&](int64_t center) {
    const int64_t low = std::max<int64_t>(1, static_cast<int64_t>(center * (1.0 - o.random_range_ratio)));
    const int64_t high = std::max(low, static_cast<int64_t>(center * (1.0 + o.random_range_ratio)));
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  };
  std::uniform_int_distribution<int32_t> token(1000, 9999);
  std::vector<Prompt> prompts;
  for (int64_t i = 0; i < o.num_prompts; ++i) {
    std::vector<int32_t> ids(static_cast<size_t>(length_around(o.random_input_len)));
    for (int32_t& id : ids) id = token(rng);
    prompts.push_back({json(ids), length_around(o.random_output_len)});
  }
  return prompts;
}

bool is_token_id_list(const json& value) {
  return value.is_array() && !value.empty() &&
         std::all_of(value.begin(), value.end(), [](const json& id) { return id.is_number_integer(); });
}

// JSONL: {"prompt": "text" | [ids], "max_tokens": N (optional, else --random-output-len)}.
// Reads up to num_prompts lines; the benchmark cycles through fewer.
std::optional<std::vector<Prompt>> file_prompts(const ServeOptions& o, std::string* error) {
  std::ifstream in(o.dataset);
  if (!in) {
    *error = "cannot open dataset " + o.dataset;
    return std::nullopt;
  }
  std::vector<Prompt> prompts;
  std::string line;
  for (int64_t line_number = 1; static_cast<int64_t>(prompts.size()) < o.num_prompts && std::getline(in, line);
       ++line_number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json row = json::parse(line, nullptr, false);
    const std::string where = o.dataset + ":" + std::to_string(line_number) + ": ";
    if (!row.is_object() || !row.contains("prompt") || !(row["prompt"].is_string() || is_token_id_list(row["prompt"]))) {
      *error = where + "expected {\"prompt\": string or list of token ids, \"max_tokens\": N}";
      return std::nullopt;
    }
    Prompt p{row["prompt"], o.random_output_len};
    if (row.contains("max_tokens")) {
      if (!row["max_tokens"].is_number_integer() || row["max_tokens"].get<int64_t>() < 1) {
        *error = where + "max_tokens must be a positive integer";
        return std::nullopt;
      }
      p.max_tokens = row["max_tokens"].get<int64_t>();
    }
    prompts.push_back(std::move(p));
  }
  if (prompts.empty()) *error = "no prompts in " + o.dataset;
  return prompts.empty() ? std::nullopt : std::optional(std::move(prompts));
}

WorkItem make_work_item(const Prompt& p, const ServeOptions& o, const std::string& model) {
  json body = {{"model", model}};
  if (o.chat()) {
    body["messages"] = json::array({{{"role", "user"}, {"content", p.prompt}}});
    body["max_completion_tokens"] = p.max_tokens;
  } else {
    body["prompt"] = p.prompt;
    body["max_tokens"] = p.max_tokens;
  }
  body["temperature"] = 0.0;
  if (o.ignore_eos) body["ignore_eos"] = true;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const int64_t known_prompt_tokens = p.prompt.is_array() ? static_cast<int64_t>(p.prompt.size()) : 0;
  return {body.dump(), known_prompt_tokens, p.max_tokens};
}

// ---------------------------------------------------------------------------------------
// Statistics

struct Distribution {
  double mean = 0, median = 0, p99 = 0, stddev = 0;
};

// numpy.percentile's default: linear interpolation between the neighbouring ranks.
template <typename ValueAtRank>
double interpolated_percentile(int64_t count, double percent, ValueAtRank value_at) {
  const double rank = percent / 100.0 * static_cast<double>(count - 1);
  const auto below = static_cast<int64_t>(std::floor(rank));
  const int64_t above = std::min(below + 1, count - 1);
  const double low = value_at(below);
  return low + (value_at(above) - low) * (rank - static_cast<double>(below));
}

// Exact, for the per-request figures (TTFT, TPOT, E2EL).
Distribution describe(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  const auto n = static_cast<int64_t>(values.size());
  auto at = [&](int64_t rank) { return values[static_cast<size_t>(rank)]; };
  double sum = 0, sum_sq = 0;
  for (double v : values) sum += v;
  d.mean = sum / static_cast<double>(n);
  for (double v : values) sum_sq += (v - d.mean) * (v - d.mean);
  d.stddev = std::sqrt(sum_sq / static_cast<double>(n));
  d.median = interpolated_percentile(n, 50, at);
  d.p99 = interpolated_percentile(n, 99, at);
  return d;
}

// Inter-token gaps come one per streamed token, too many to keep through a long soak. This
// log-linear histogram of nanoseconds (exact below 2 us, then 1024 buckets per power of two)
// holds any number of them in ~450 KiB, percentiles within 0.05%; mean and stddev are exact.
class GapHistogram {
 public:
  void add(double seconds) {
    const auto ns = static_cast<uint64_t>(std::clamp(seconds, 0.0, 1e9) * 1e9);
    ++counts_[bucket_of(ns)];
    ++count_;
    const double delta = seconds - mean_;  // Welford
    mean_ += delta / static_cast<double>(count_);
    m2_ += delta * (seconds - mean_);
  }

  Distribution describe() const {
    Distribution d;
    if (count_ == 0) return d;
    d.mean = mean_;
    d.stddev = std::sqrt(m2_ / static_cast<double>(count_));
    auto at = [&](int64_t rank) { return value_at_rank(rank); };
    d.median = interpolated_percentile(count_, 50, at);
    d.p99 = interpolated_percentile(count_, 99, at);
    return d;
  }

 private:
  static constexpr int kSubBits = 10;
  static constexpr size_t kBuckets = (54u << kSubBits) + (1u << kSubBits);  // covers all of uint64

  static size_t bucket_of(uint64_t ns) {
    if (ns < (2u << kSubBits)) return ns;
    const int shift = std::bit_width(ns) - (kSubBits + 1);
    return (static_cast<size_t>(shift) << kSubBits) + static_cast<size_t>(ns >> shift);
  }

  static double midpoint_seconds(size_t bucket) {
    if (bucket < (2u << kSubBits)) return static_cast<double>(bucket) * 1e-9;
    const int shift = static_cast<int>(bucket >> kSubBits) - 1;
    const uint64_t low = static_cast<uint64_t>(bucket - (static_cast<size_t>(shift) << kSubBits)) << shift;
    return (static_cast<double>(low) + static_cast<double>((uint64_t{1} << shift) - 1) / 2.0) * 1e-9;
  }

  double value_at_rank(int64_t rank) const {
    int64_t seen = 0;
    for (size_t b = 0; b < counts_.size(); ++b) {
      seen += counts_[b];
      if (seen > rank) return midpoint_seconds(b);
    }
    return midpoint_seconds(counts_.size() - 1);
  }

  std::vector<int64_t> counts_ = std::vector<int64_t>(kBuckets);
  int64_t count_ = 0;
  double mean_ = 0, m2_ = 0;
};

class ResultStats {
 public:
  explicit ResultStats(Clock::time_point bench_start) : bench_start_(bench_start) {}

  void add(const StreamResult& r, int64_t known_prompt_tokens) {
    if (r.outcome == Outcome::kDisconnected) {
      ++disconnected;
      return;
    }
    if (r.outcome == Outcome::kFailed) {
      add_failure(r);
      return;
    }
    ++completed;
    const int64_t output_tokens = r.completion_tokens >= 0 ? r.completion_tokens : r.content_events;
    input_tokens += r.prompt_tokens >= 0 ? r.prompt_tokens : known_prompt_tokens;
    this->output_tokens += output_tokens;
    ttfts.push_back(r.ttft_s);
    e2els.push_back(r.latency_s);
    if (output_tokens > 1) tpots.push_back((r.latency_s - r.ttft_s) / static_cast<double>(output_tokens - 1));
    for (double gap : r.itls_s) itls.add(gap);
    count_tokens_per_second(r);
  }

  // The most content events that arrived within one wall-clock second of the run.
  int64_t peak_tokens_per_second() const {
    return tokens_per_second_.empty() ? 0 : *std::max_element(tokens_per_second_.begin(), tokens_per_second_.end());
  }

  int64_t completed = 0, failed = 0, disconnected = 0;
  int64_t input_tokens = 0, output_tokens = 0;
  std::vector<double> ttfts, tpots, e2els;  // seconds
  GapHistogram itls;
  std::map<std::string, int64_t> failures_by_kind;
  std::map<std::string, int64_t> error_messages;  // the first kMaxDistinctErrors distinct ones
  std::string first_error;

 private:
  void add_failure(const StreamResult& r) {
    ++failed;
    ++failures_by_kind[r.failure_kind];
    if (first_error.empty()) first_error = r.error_message;
    if (error_messages.size() < kMaxDistinctErrors || error_messages.contains(r.error_message))
      ++error_messages[r.error_message];
  }

  void count_tokens_per_second(const StreamResult& r) {
    double t = std::chrono::duration<double>(r.start - bench_start_).count() + r.ttft_s;
    bump_second(t);
    for (double gap : r.itls_s) bump_second(t += gap);
  }

  void bump_second(double seconds_since_start) {
    if (seconds_since_start < 0) return;
    const auto second = static_cast<size_t>(seconds_since_start);
    if (second >= tokens_per_second_.size()) tokens_per_second_.resize(second + 1);
    ++tokens_per_second_[second];
  }

  Clock::time_point bench_start_;
  std::vector<int64_t> tokens_per_second_;
};

// ---------------------------------------------------------------------------------------
// The run: arrivals, concurrency limit, progress, Ctrl-C

class ServeRun {
 public:
  ServeRun(asio::io_context& io, bench_serve::HttpClient& client, const ServeOptions& o, std::string path,
           const std::vector<WorkItem>& work)
      : io_(io),
        client_(client),
        o_(o),
        path_(std::move(path)),
        work_(work),
        arrival_rng_(o.seed + 1),
        disconnect_rng_(o.seed + 2),
        arrival_timer_(io),
        slot_freed_(io),
        progress_timer_(io),
        signals_(io, SIGINT, SIGTERM) {}

  // Runs the benchmark to its end; exceptions from a coroutine surface here.
  void run() {
    start_ = Clock::now();
    stats_.emplace(start_);
    spawn(dispatch());
    spawn(report_progress());
    spawn(handle_signals());
    io_.restart();
    io_.run();
  }

  const ResultStats& stats() const { return *stats_; }
  double duration_s() const {  // never 0: rates divide by it
    return std::max(1e-9, std::chrono::duration<double>(end_ - start_).count());
  }
  int64_t peak_in_flight() const { return peak_in_flight_; }

 private:
  template <typename Task>
  void spawn(Task task) {
    asio::co_spawn(io_, std::move(task), [](std::exception_ptr e) {
      if (e) std::rethrow_exception(e);
    });
  }

  bool keep_issuing(int64_t issued) const {
    if (stopping_) return false;
    if (o_.duration_s > 0) return Clock::now() < start_ + std::chrono::duration<double>(o_.duration_s);
    return issued < o_.num_prompts;
  }

  asio::awaitable<void> dispatch() {
    auto next_arrival = Clock::now();
    boost::system::error_code ec;
    for (int64_t issued = 0; keep_issuing(issued); ++issued) {
      if (issued > 0 && std::isfinite(o_.rate)) {  // Poisson process: exponential gaps
        next_arrival += std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(std::exponential_distribution<double>(o_.rate)(arrival_rng_)));
        arrival_timer_.expires_at(next_arrival);
        co_await arrival_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
      while (o_.max_concurrency > 0 && in_flight_ >= o_.max_concurrency && !stopping_) {
        slot_freed_.expires_at(Clock::time_point::max());  // cancelled by the request that ends
        co_await slot_freed_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
      if (!keep_issuing(issued)) break;
      launch(work_[static_cast<size_t>(issued) % work_.size()]);
    }
    dispatch_done_ = true;
    finish_if_idle();
  }

  void launch(const WorkItem& item) {
    ++in_flight_;
    peak_in_flight_ = std::max(peak_in_flight_, in_flight_);
    spawn(run_request(item, disconnect_point(item.max_tokens)));
  }

  // With probability --disconnect-prob, hang up after a uniform number of tokens in
  // [0, max_tokens) (0: as soon as the headers arrive); else -1, never.
  int64_t disconnect_point(int64_t max_tokens) {
    if (o_.disconnect_prob <= 0 || std::uniform_real_distribution<double>(0, 1)(disconnect_rng_) >= o_.disconnect_prob)
      return -1;
    return std::uniform_int_distribution<int64_t>(0, std::max<int64_t>(0, max_tokens - 1))(disconnect_rng_);
  }

  asio::awaitable<void> run_request(const WorkItem& item, int64_t disconnect_after) {
    const StreamResult result = co_await client_.stream(path_, item.body, disconnect_after);
    stats_->add(result, item.prompt_tokens);
    --in_flight_;
    slot_freed_.cancel();
    finish_if_idle();
  }

  void finish_if_idle() {
    if (!dispatch_done_ || in_flight_ > 0 || finished_) return;
    finished_ = true;
    end_ = Clock::now();
    progress_timer_.cancel();  // the last pending operations: io_context::run returns
    signals_.cancel();
  }

  asio::awaitable<void> report_progress() {
    boost::system::error_code ec;
    while (!finished_) {
      progress_timer_.expires_after(kProgressInterval);
      co_await progress_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (finished_) break;
      const ResultStats& s = *stats_;
      std::fprintf(stderr, "[%6.0fs] completed %lld, failed %lld, disconnected %lld, in flight %lld\n",
                   std::chrono::duration<double>(Clock::now() - start_).count(), static_cast<long long>(s.completed),
                   static_cast<long long>(s.failed), static_cast<long long>(s.disconnected),
                   static_cast<long long>(in_flight_));
    }
  }

  // First Ctrl-C: issue nothing more, let the requests in flight finish. Second: give up.
  asio::awaitable<void> handle_signals() {
    boost::system::error_code ec;
    co_await signals_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec || finished_) co_return;
    std::fprintf(stderr, "stopping: waiting for %lld requests in flight (interrupt again to abort)\n",
                 static_cast<long long>(in_flight_));
    stopping_ = true;
    arrival_timer_.cancel();
    slot_freed_.cancel();
    co_await signals_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!ec && !finished_) std::_Exit(130);
  }

  asio::io_context& io_;
  bench_serve::HttpClient& client_;
  const ServeOptions& o_;
  std::string path_;
  const std::vector<WorkItem>& work_;
  std::mt19937_64 arrival_rng_;
  std::mt19937_64 disconnect_rng_;
  asio::steady_timer arrival_timer_;
  asio::steady_timer slot_freed_;
  asio::steady_timer progress_timer_;
  asio::signal_set signals_;
  std::optional<ResultStats> stats_;
  Clock::time_point start_, end_;
  int64_t in_flight_ = 0;
  int64_t peak_in_flight_ = 0;
  bool dispatch_done_ = false;
  bool finished_ = false;
  bool stopping_ = false;
};

// ---------------------------------------------------------------------------------------
// Report

void print_rule(std::string_view title, char fill) {  // Python's "{:c^50}".format(title)
  const size_t pad = title.size() < 50 ? 50 - title.size() : 0;
  std::printf("%s%.*s%s\n", std::string(pad / 2, fill).c_str(), static_cast<int>(title.size()), title.data(),
              std::string(pad - pad / 2, fill).c_str());
}
void print_row(const std::string& label, int64_t value) {
  std::printf("%-40s %-10lld\n", label.c_str(), static_cast<long long>(value));
}
void print_row(const std::string& label, double value) { std::printf("%-40s %-10.2f\n", label.c_str(), value); }

struct MetricSummary {
  const char* key;    // vLLM's JSON key stem: ttft, tpot, itl, e2el
  const char* name;   // TTFT, TPOT, ...
  const char* title;  // section rule
  Distribution seconds;
};

std::vector<MetricSummary> metric_summaries(const ResultStats& s) {
  return {{"ttft", "TTFT", "Time to First Token", describe(s.ttfts)},
          {"tpot", "TPOT", "Time per Output Token (excl. 1st token)", describe(s.tpots)},
          {"itl", "ITL", "Inter-token Latency", s.itls.describe()},
          {"e2el", "E2EL", "End-to-end Latency", describe(s.e2els)}};
}

void print_summary(const ServeOptions& o, const ServeRun& run, const std::vector<MetricSummary>& metrics) {
  const ResultStats& s = run.stats();
  const double duration = run.duration_s();
  print_rule(" Serving Benchmark Result ", '=');
  print_row("Successful requests:", s.completed);
  print_row("Failed requests:", s.failed);
  print_row("Disconnected (by design):", s.disconnected);
  if (o.max_concurrency > 0) print_row("Maximum request concurrency:", o.max_concurrency);
  if (std::isfinite(o.rate)) print_row("Request rate configured (RPS):", o.rate);
  print_row("Benchmark duration (s):", duration);
  print_row("Total input tokens:", s.input_tokens);
  print_row("Total generated tokens:", s.output_tokens);
  print_row("Request throughput (req/s):", s.completed / duration);
  print_row("Output token throughput (tok/s):", s.output_tokens / duration);
  print_row("Peak output token throughput (tok/s):", static_cast<double>(s.peak_tokens_per_second()));
  print_row("Peak concurrent requests:", static_cast<double>(run.peak_in_flight()));
  print_row("Total Token throughput (tok/s):", (s.input_tokens + s.output_tokens) / duration);
  for (const MetricSummary& m : metrics) {
    print_rule(m.title, '-');
    print_row(std::string("Mean ") + m.name + " (ms):", m.seconds.mean * 1e3);
    print_row(std::string("Median ") + m.name + " (ms):", m.seconds.median * 1e3);
    print_row(std::string("P99 ") + m.name + " (ms):", m.seconds.p99 * 1e3);
  }
  if (!s.failures_by_kind.empty()) {
    print_rule("Failed Requests by Status", '-');
    for (const auto& [kind, count] : s.failures_by_kind) {
      const bool is_status = !kind.empty() && std::isdigit(static_cast<unsigned char>(kind[0]));
      print_row((is_status ? "HTTP " + kind : kind) + ":", count);
    }
  }
  print_rule("", '=');
  std::fflush(stdout);
}

std::string local_date() {  // vLLM's "%Y%m%d-%H%M%S"
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", &tm);
  return text;
}

bool write_json(const ServeOptions& o, const std::string& model, const ServeRun& run,
                const std::vector<MetricSummary>& metrics) {
  const ResultStats& s = run.stats();
  const double duration = run.duration_s();
  nlohmann::ordered_json j = {
      {"date", local_date()},
      {"backend", o.chat() ? "openai-chat" : "openai"},
      {"base_url", o.base_url},
      {"endpoint", o.endpoint},
      {"model_id", model},
      {"dataset", o.dataset},
      {"num_prompts", o.num_prompts},
      {"request_rate", std::isfinite(o.rate) ? json(o.rate) : json("inf")},
      {"max_concurrency", o.max_concurrency > 0 ? json(o.max_concurrency) : json(nullptr)},
      {"duration_limit_s", o.duration_s > 0 ? json(o.duration_s) : json(nullptr)},
      {"disconnect_prob", o.disconnect_prob},
      {"duration", duration},
      {"completed", s.completed},
      {"failed", s.failed},
      {"disconnected", s.disconnected},
      {"total_input_tokens", s.input_tokens},
      {"total_output_tokens", s.output_tokens},
      {"request_throughput", s.completed / duration},
      {"output_throughput", s.output_tokens / duration},
      {"total_token_throughput", (s.input_tokens + s.output_tokens) / duration},
      {"max_output_tokens_per_s", s.peak_tokens_per_second()},
      {"max_concurrent_requests", run.peak_in_flight()},
  };
  for (const MetricSummary& m : metrics) {
    const std::string stem = m.key;
    j["mean_" + stem + "_ms"] = m.seconds.mean * 1e3;
    j["median_" + stem + "_ms"] = m.seconds.median * 1e3;
    j["std_" + stem + "_ms"] = m.seconds.stddev * 1e3;
    j["p99_" + stem + "_ms"] = m.seconds.p99 * 1e3;
  }
  j["failed_by_status"] = s.failures_by_kind;
  j["errors"] = s.error_messages;
  std::ofstream out(o.output_json);
  out << j.dump(2) << "\n";
  return static_cast<bool>(out);
}

// ---------------------------------------------------------------------------------------
// Setup

// Every stream holds a socket; the usual soft limit of 1024 would cap concurrency.
rlim_t raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur;
}

std::optional<std::string> validate(ServeOptions& o) {
  if (o.request_rate == "inf") {
    o.rate = INFINITY;
  } else {
    char* end = nullptr;
    o.rate = std::strtod(o.request_rate.c_str(), &end);
    if (end == o.request_rate.c_str() || *end != '\0' || !(o.rate > 0)) return "--request-rate must be a positive number or inf";
  }
  if (o.num_prompts < 1) return "--num-prompts must be at least 1";
  if (o.random_input_len < 1 || o.random_output_len < 1) return "--random-input-len and --random-output-len must be at least 1";
  if (!(o.random_range_ratio >= 0 && o.random_range_ratio < 1)) return "--random-range-ratio must be in [0, 1)";
  if (o.max_concurrency < 0) return "--max-concurrency must not be negative";
  if (!(o.disconnect_prob >= 0 && o.disconnect_prob <= 1)) return "--disconnect-prob must be in [0, 1]";
  if (o.duration_s < 0) return "--duration must not be negative";
  if (!(o.request_timeout_s > 0)) return "--request-timeout must be positive";
  if (!o.endpoint.starts_with('/')) return "--endpoint must start with /";
  if (o.duration_s > 0 && !std::isfinite(o.rate) && o.max_concurrency == 0)
    return "--duration needs --max-concurrency or a finite --request-rate (else it would open requests without end)";
  if (!o.ignore_eos_option->count()) o.ignore_eos = o.dataset == "random";
  return std::nullopt;
}

// Runs one coroutine on `io` to its end and returns its value.
template <typename T>
T run_to_completion(asio::io_context& io, asio::awaitable<T> task) {
  std::optional<T> value;
  std::exception_ptr error;
  asio::co_spawn(io, std::move(task), [&](std::exception_ptr e, T v) {
    error = e;
    if (!e) value = std::move(v);
  });
  io.restart();
  io.run();
  if (error) std::rethrow_exception(error);
  return std::move(*value);
}

// The model to request: --model, else the first id of GET /v1/models. Either way that GET
// proves the server answers.
std::optional<std::string> find_model(asio::io_context& io, bench_serve::HttpClient& client, const ServeOptions& o,
                                      const std::string& prefix, std::string* error) {
  const bench_serve::SimpleResponse models = run_to_completion(io, client.get(prefix + "/v1/models"));
  if (models.status == 0) {
    *error = "cannot reach the server at " + o.base_url + ": " + models.error_message;
    return std::nullopt;
  }
  if (!o.model.empty()) return o.model;
  if (models.status != 200) {
    *error = "GET /v1/models answered HTTP " + std::to_string(models.status) +
             (models.status == 401 ? " (check --api-key)" : "; pass --model");
    return std::nullopt;
  }
  const json list = json::parse(models.body, nullptr, false);
  if (list.is_object() && list.contains("data") && list["data"].is_array() && !list["data"].empty() &&
      list["data"][0].is_object() && list["data"][0].contains("id") && list["data"][0]["id"].is_string())
    return list["data"][0]["id"].get<std::string>();
  *error = "GET /v1/models lists no model; pass --model";
  return std::nullopt;
}

// vLLM's initial test run: one request must succeed before the benchmark, so a wrong
// endpoint, model or key fails fast. Retries twice in case of a transient failure.
std::optional<std::string> test_request(asio::io_context& io, bench_serve::HttpClient& client, const std::string& path,
                                        const WorkItem& item) {
  StreamResult result;
  for (int attempt = 0; attempt < 3; ++attempt) {
    result = run_to_completion(io, client.stream(path, item.body, -1));
    if (result.outcome == Outcome::kSuccess) return std::nullopt;
    const bool client_error = !result.failure_kind.empty() && result.failure_kind[0] == '4';
    if (client_error) break;
  }
  return "the initial test request failed (" + result.failure_kind + "): " + result.error_message;
}

int run_serve(ServeOptions& o) {
  if (auto problem = validate(o)) {
    std::cerr << "error: " << *problem << "\n";
    return kExitBadArguments;
  }
  std::string error;
  const auto url = bench_serve::parse_base_url(o.base_url, &error);
  if (!url) {
    std::cerr << "error: " << error << "\n";
    return kExitBadArguments;
  }
  const bool random = o.dataset == "random";
  std::optional<std::vector<Prompt>> prompts = random ? random_prompts(o) : file_prompts(o, &error);
  if (!prompts) {
    std::cerr << "error: " << error << "\n";
    return kExitBadArguments;
  }
  if (o.chat() && std::any_of(prompts->begin(), prompts->end(), [](const Prompt& p) { return !p.prompt.is_string(); })) {
    std::cerr << "error: chat endpoints take text prompts; token-id prompts (the random dataset) need /v1/completions\n";
    return kExitBadArguments;
  }
  const rlim_t open_files = raise_open_file_limit();
  const int64_t expected_streams = o.max_concurrency > 0 ? o.max_concurrency : std::isfinite(o.rate) ? 0 : o.num_prompts;
  if (open_files > 0 && expected_streams + 64 > static_cast<int64_t>(open_files))
    std::cerr << "warning: up to " << expected_streams << " streams but only " << open_files << " open files allowed\n";

  asio::io_context io(1);  // one thread: no locking inside asio
  bench_serve::HttpClient client(io, *url, o.api_key, std::chrono::milliseconds(static_cast<int64_t>(o.request_timeout_s * 1e3)));
  if (!client.resolve(&error)) {
    std::cerr << "error: " << error << "\n";
    return kExitBadArguments;
  }
  const auto model = find_model(io, client, o, url->path_prefix, &error);
  if (!model) {
    std::cerr << "error: " << error << "\n";
    return kExitBadArguments;
  }
  std::vector<WorkItem> work;
  work.reserve(prompts->size());
  for (const Prompt& p : *prompts) work.push_back(make_work_item(p, o, *model));
  prompts.reset();

  const std::string path = url->path_prefix + o.endpoint;
  std::cerr << "Model: " << *model << "\nStarting initial single prompt test run...\n";
  if (auto failure = test_request(io, client, path, work.front())) {
    std::cerr << "error: " << *failure << "\n";
    return kExitBadArguments;
  }
  std::cerr << "Initial test run completed. Starting main benchmark run...\n"
            << "Traffic request rate: " << o.request_rate << "\n"
            << "Maximum request concurrency: " << (o.max_concurrency > 0 ? std::to_string(o.max_concurrency) : "None") << "\n";

  ServeRun run(io, client, o, path, work);
  run.run();
  const std::vector<MetricSummary> metrics = metric_summaries(run.stats());
  print_summary(o, run, metrics);
  if (!run.stats().first_error.empty()) std::cerr << "first failure: " << run.stats().first_error << "\n";
  if (!o.output_json.empty() && !write_json(o, *model, run, metrics)) {
    std::cerr << "error: cannot write " << o.output_json << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

void add_bench_serve_command(CLI::App& bench, int* exit_code) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = bench.add_subcommand("serve", "Online serving benchmark against a running OpenAI-compatible server");
  cmd->add_option("--base-url", o->base_url, "Server, http://HOST:PORT[/PREFIX]")->capture_default_str();
  cmd->add_option("--endpoint", o->endpoint, "Completions route (a chat/completions route sends messages)")
      ->capture_default_str();
  cmd->add_option("--model", o->model, "Model name in requests (default: the first id of GET /v1/models)");
  cmd->add_option("--dataset", o->dataset,
                  "random (token ids), or a JSONL file of {\"prompt\": text or ids, \"max_tokens\": N}")
      ->capture_default_str();
  cmd->add_option("--random-input-len", o->random_input_len, "Random dataset: prompt tokens")->capture_default_str();
  cmd->add_option("--random-output-len", o->random_output_len,
                  "max_tokens per request (also for dataset lines without max_tokens)")
      ->capture_default_str();
  cmd->add_option("--random-range-ratio", o->random_range_ratio,
                  "Random dataset: lengths spread uniformly over len * (1 +- ratio)")
      ->capture_default_str();
  cmd->add_option("--num-prompts", o->num_prompts, "Requests to send (with --duration: distinct prompts, cycled)")
      ->capture_default_str();
  cmd->add_option("--request-rate", o->request_rate, "Poisson arrivals per second, or inf to send all at once")
      ->capture_default_str();
  cmd->add_option("--max-concurrency", o->max_concurrency, "Most requests in flight (default: no limit)");
  cmd->add_option("--seed", o->seed, "Seed of prompts, arrivals and disconnects")->capture_default_str();
  cmd->add_option("--api-key", o->api_key, "Sent as Authorization: Bearer KEY");
  cmd->add_option("--disconnect-prob", o->disconnect_prob,
                  "Probability that the client hangs up a request at a random point mid-stream (soak tests)")
      ->capture_default_str();
  cmd->add_option("--duration", o->duration_s,
                  "Keep issuing requests for this many seconds instead of stopping after --num-prompts");
  cmd->add_option("--request-timeout", o->request_timeout_s,
                  "Fail a request when the server sends nothing for this many seconds")
      ->capture_default_str();
  cmd->add_option("--output-json", o->output_json, "Write the figures to this JSON file");
  o->ignore_eos_option =
      cmd->add_flag("--ignore-eos,!--no-ignore-eos", o->ignore_eos, "Send ignore_eos (default: on for random)");
  cmd->callback([o, exit_code] {
    try {
      *exit_code = run_serve(*o);
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << "\n";
      *exit_code = 1;
    }
  });
}

}  // namespace tessera::cli
