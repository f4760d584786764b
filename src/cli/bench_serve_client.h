// HTTP/1.1 client of `tessera bench serve`: streamed OpenAI completions over keep-alive
// connections, each server-sent event timestamped when its bytes arrive. Single-threaded:
// every member runs on one io_context thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

namespace tessera::cli::bench_serve {

using Clock = std::chrono::steady_clock;

// http://HOST[:PORT][/PREFIX]; plain HTTP only.
struct BaseUrl {
  std::string host;
  std::string port = "80";
  std::string authority;    // HOST[:PORT] as written, for the Host header
  std::string path_prefix;  // "" or "/prefix", no trailing slash
};
std::optional<BaseUrl> parse_base_url(std::string_view url, std::string* error);

enum class Outcome { kSuccess, kFailed, kDisconnected };

struct StreamResult {
  Outcome outcome = Outcome::kFailed;
  // For failures: the HTTP status ("503") or "connection error", "stream error", "timeout",
  // "error event", "incomplete stream", "no tokens".
  std::string failure_kind;
  std::string error_message;
  Clock::time_point start;  // when the request was about to be sent
  double ttft_s = 0;        // start -> first event with non-empty text
  double latency_s = 0;     // start -> end of the stream
  std::vector<double> itls_s;  // gaps between successive content events
  int64_t content_events = 0;
  int64_t prompt_tokens = -1;      // from the usage event; -1 when the server sent none
  int64_t completion_tokens = -1;  // likewise
};

struct SimpleResponse {
  int status = 0;            // 0: no response (error_message says why)
  std::string body;
  std::string error_message;
};

class HttpClient {
 public:
  HttpClient(boost::asio::io_context& io, BaseUrl url, std::string api_key, std::chrono::milliseconds idle_timeout);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Resolves the host once; every connection reuses the addresses. False (and *error) on failure.
  bool resolve(std::string* error);

  // GET on a connection of its own, closed afterwards.
  boost::asio::awaitable<SimpleResponse> get(std::string path);

  // POSTs the JSON `body` to `path` and reads the event stream. disconnect_after >= 0 closes
  // the connection once that many content events arrived (0: right after the response
  // headers), which ends the request as kDisconnected. `body` must outlive the call.
  boost::asio::awaitable<StreamResult> stream(const std::string& path, const std::string& body, int64_t disconnect_after);

 private:
  struct Connection;
  class Lease;

  std::unique_ptr<Connection> take_idle();  // nullptr when the pool is empty
  boost::asio::awaitable<boost::system::error_code> open(Connection& connection);
  void watch(Connection* connection);
  void unwatch(Connection* connection);
  boost::asio::awaitable<void> sweep_idle_connections();

  boost::asio::io_context& io_;
  BaseUrl url_;
  std::string authorization_;  // "Bearer KEY", or empty
  std::chrono::milliseconds idle_timeout_;
  boost::asio::ip::tcp::resolver::results_type endpoints_;
  std::vector<std::unique_ptr<Connection>> idle_;  // keep-alive pool, most recently used last
  // Connections in use. One periodic sweep over them enforces idle_timeout_, cheaper than a
  // timer armed and cancelled around every read.
  std::unordered_set<Connection*> watched_;
  boost::asio::steady_timer sweep_timer_;
  bool sweeping_ = false;
};

}  // namespace tessera::cli::bench_serve
