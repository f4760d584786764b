// HTTP/1.1 transport on Boost.Beast with C++20 coroutines: keep-alive, chunked streaming
// responses, limits on every part of a request (http_request_reader.h), the Origin and
// Content-Type policy (http_policy.h), timeouts for slow or idle clients, uvicorn's access
// log (access_log.h). Routes see one HttpExchange per request; everything of one connection
// runs on its own strand, and an exception in a connection ends that connection only. It
// listens on TCP host:port or on a Unix socket (--uds); both go through one code path, on
// Asio's generic stream protocol (the listening endpoint decides the address family).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without it
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/basic_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "server/access_log.h"
#include "server/http_request_reader.h"

namespace tessera::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// A TCP or a Unix-socket connection: Beast's stream (timeouts) over Asio's generic protocol.
using StreamProtocol = net::generic::stream_protocol;
using HttpStream = beast::basic_stream<StreamProtocol, net::any_io_executor, beast::unlimited_rate_policy>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;            // 0: any free port
  // Non-empty: listen on a Unix socket at this path instead of host:port (vLLM's --uds). A
  // stale socket file there (no server listening) is replaced; the file goes at shutdown.
  std::string uds;
  size_t max_body_bytes = 8u << 20;
  size_t max_header_bytes = 64u << 10;
  double request_timeout = 60.0;   // seconds for a whole request to arrive, and per write
  double keep_alive_timeout = 30.0;  // seconds an idle connection waits for its next request
  int threads = 1;
  // Web origins ("https://app.example.com") whose pages may call the API; "*": any. Requests
  // with another Origin get 403 (see origin_allowed()).
  std::vector<std::string> allowed_origins;
  AccessLogOptions access_log;
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

  // Binds and listens; the port actually bound (for port 0; 0 on a Unix socket). Throws
  // std::exception with a message that says what is wrong (in use, no such directory, ...).
  uint16_t listen();
  // What keeps `path` from being a Unix socket to listen on (too long, no such directory, a
  // file that is not a socket, a server listening there), or "" when nothing does; checked
  // by listen() too, and by `tessera serve` before it loads the model.
  static std::string unix_socket_path_problem(const std::string& path);
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
  net::awaitable<void> session(StreamProtocol::socket socket);
  net::awaitable<void> serve(HttpStream& stream, const std::string& client);
  void start_session(StreamProtocol::socket socket);
  void run_io();
  void listen_unix();
  void remove_socket_file();

  HttpServerOptions options_;
  HttpHandler handler_;
  AccessLog access_log_;
  net::io_context ioc_;
  net::basic_socket_acceptor<StreamProtocol> acceptor_;
  // The Unix socket file this server bound (device and inode), removed once it stops
  // accepting unless another file has taken its place.
  bool socket_file_bound_ = false;
  uint64_t socket_file_dev_ = 0;
  uint64_t socket_file_ino_ = 0;
  std::atomic<size_t> active_{0};
  std::atomic<bool> accepting_{true};  // false: answers close their connections
};

// A body with an OpenAI-shaped error: {"error": {"message", "type", "param", "code"}}.
std::string error_body(http::status status, std::string_view message, std::string_view param = {});
// vLLM's error type name for a status (BadRequestError, NotFoundError, ...).
const char* error_type(http::status status);

}  // namespace tessera::server
