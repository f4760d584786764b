// HTTP/1.1 transport on Boost.Beast with C++20 coroutines: keep-alive, chunked streaming
// responses, limits on every part of a request (http_request_reader.h), the Origin and
// Content-Type policy (http_policy.h), timeouts for slow or idle clients. Routes see one
// HttpExchange per request; everything of one connection runs on its own strand, and an
// exception in a connection ends that connection only.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without it
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "server/http_request_reader.h"

namespace tessera::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;            // 0: any free port
  size_t max_body_bytes = 8u << 20;
  size_t max_header_bytes = 64u << 10;
  double request_timeout = 60.0;   // seconds for a whole request to arrive, and per write
  double keep_alive_timeout = 30.0;  // seconds an idle connection waits for its next request
  int threads = 1;
  // Web origins ("https://app.example.com") whose pages may call the API; "*": any. Requests
  // with another Origin get 403 (see origin_allowed()).
  std::vector<std::string> allowed_origins;
};

// One request and its response. A handler answers once with respond(), or streams:
// start_stream(), write() any number of times, end_stream(). Writes return false once the
// client is gone.
class HttpExchange {
 public:
  struct Impl;
  explicit HttpExchange(Impl& impl) : impl_(impl) {}

  const HttpRequest& request() const;
  // A header every response of this exchange carries (error answers and streams included).
  void add_response_header(std::string name, std::string value);
  net::awaitable<void> respond(http::status status, std::string_view content_type, std::string body);
  net::awaitable<bool> start_stream(std::string_view content_type);
  net::awaitable<bool> write(std::string_view data);
  net::awaitable<void> end_stream();

  // Waits until wake() is called (from any thread) or `seconds` pass. A wake() before the
  // wait makes it return at once.
  net::awaitable<void> wait(double seconds);
  // Thread-safe and cheap; keeps the exchange's wake state alive on its own.
  std::function<void()> waker();
  // Ends the exchange without a response and closes the connection (the client is gone).
  void abandon();
  // True once the client is known to be gone (checked without reading or blocking). A client
  // that only shut down its sending side (shutdown(SHUT_WR), `nc -N`) still waits for the
  // answer and is not gone; a closed one is told apart by a probe (see the definition).
  bool client_gone();

 private:
  Impl& impl_;
};

using HttpHandler = std::function<net::awaitable<void>(HttpExchange&)>;

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpHandler handler);
  ~HttpServer();

  // Binds and listens; the port actually bound (for port 0).
  uint16_t listen();
  // Runs the IO threads; returns after stop().
  void run();
  // Stops accepting new connections (open ones keep working).
  void stop_accepting();
  // Ends run(): closes every connection.
  void stop();
  net::io_context& io_context() { return ioc_; }
  // Requests being handled now (a response started and not finished).
  size_t num_active() const { return active_.load(); }

 private:
  net::awaitable<void> accept_loop();
  void start_accept_loop();
  net::awaitable<void> session(net::ip::tcp::socket socket);
  net::awaitable<void> serve(beast::tcp_stream& stream);
  void start_session(net::ip::tcp::socket socket);
  void run_io();

  HttpServerOptions options_;
  HttpHandler handler_;
  net::io_context ioc_;
  net::ip::tcp::acceptor acceptor_;
  std::atomic<size_t> active_{0};
  std::atomic<bool> accepting_{true};  // false: answers close their connections
};

// A body with an OpenAI-shaped error: {"error": {"message", "type", "param", "code"}}.
std::string error_body(http::status status, std::string_view message, std::string_view param = {});
// vLLM's error type name for a status (BadRequestError, NotFoundError, ...).
const char* error_type(http::status status);

}  // namespace tessera::server
