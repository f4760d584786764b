#include "server/http_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/write.hpp>
#include <nlohmann/json.hpp>

namespace tessera::server {

namespace {

using tcp = net::ip::tcp;

// A generic endpoint of the TCP family as Asio's TCP endpoint (address and port).
tcp::endpoint as_tcp(const StreamProtocol::endpoint& generic) {
  tcp::endpoint ep;
  if (generic.size() <= ep.capacity()) {
    std::memcpy(ep.data(), generic.data(), generic.size());
    ep.resize(generic.size());
  }
  return ep;
}

bool is_tcp(const StreamProtocol& protocol) { return protocol.family() == AF_INET || protocol.family() == AF_INET6; }

// The client as uvicorn's access log names it: "HOST:PORT" over TCP; "" over a Unix socket,
// whose clients have no name.
std::string client_address(const StreamProtocol::socket& socket) {
  beast::error_code ec;
  const StreamProtocol::endpoint peer = socket.remote_endpoint(ec);
  if (ec || !is_tcp(peer.protocol())) return {};
  const tcp::endpoint ep = as_tcp(peer);
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

std::chrono::steady_clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

// What wakes a waiting exchange: set by any thread, consumed on the strand.
struct WakeState {
  explicit WakeState(net::any_io_executor ex) : timer(ex) {}
  net::steady_timer timer;
  std::atomic<bool> notified{false};
};

// An interim response that tells a half-closed client from a closed one (client_gone()).
constexpr std::string_view kProbe = "HTTP/1.1 100 Continue\r\n\r\n";

void log_exception(const char* where, std::exception_ptr error) {
  if (!error) return;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera: %s ended by an exception: %s\n", where, e.what());
  } catch (...) {
    std::fprintf(stderr, "tessera: %s ended by an exception of unknown type\n", where);
  }
}

// Counts a request as active for its handler's lifetime, exceptions included.
struct ActiveGuard {
  explicit ActiveGuard(std::atomic<size_t>& n) : count(n) { count.fetch_add(1); }
  ~ActiveGuard() { count.fetch_sub(1); }
  ActiveGuard(const ActiveGuard&) = delete;
  ActiveGuard& operator=(const ActiveGuard&) = delete;
  std::atomic<size_t>& count;
};

// Answers a request the reader refused, and closes. The client may still be sending (a body
// behind a refused head): closing with unread input makes the kernel send a reset, which can
// destroy the answer before the client reads it, so after our FIN the rest of its input is
// read and dropped for a short while (a lingering close, bounded in time and bytes).
net::awaitable<void> refuse(HttpStream& stream, const HttpRefusal& refusal, double write_timeout) {
  http::response<http::string_body> res{refusal.status, 11};
  res.set(http::field::server, "tessera");
  res.set(http::field::content_type, "application/json");
  res.keep_alive(false);
  res.body() = error_body(refusal.status, refusal.message);
  res.prepare_payload();
  beast::error_code ec;
  stream.expires_after(to_duration(write_timeout));
  co_await http::async_write(stream, res, net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return;
  stream.socket().shutdown(net::socket_base::shutdown_send, ec);
  stream.expires_after(to_duration(std::min(write_timeout, 2.0)));
  std::vector<char> scratch(16384);
  for (size_t drained = 0; drained < (size_t{32} << 20);) {
    drained += co_await stream.async_read_some(net::buffer(scratch), net::redirect_error(net::use_awaitable, ec));
    if (ec) break;
  }
  stream.expires_never();
}

}  // namespace

const char* error_type(http::status status) {
  switch (status) {
    case http::status::bad_request: return "BadRequestError";
    case http::status::unauthorized: return "AuthenticationError";
    case http::status::forbidden: return "PermissionDeniedError";
    case http::status::not_found: return "NotFoundError";
    case http::status::method_not_allowed: return "MethodNotAllowed";
    case http::status::request_timeout: return "RequestTimeout";
    case http::status::payload_too_large: return "RequestTooLarge";
    case http::status::unsupported_media_type: return "UnsupportedMediaTypeError";
    case http::status::request_header_fields_too_large: return "RequestHeaderFieldsTooLarge";
    case http::status::too_many_requests: return "RateLimitError";
    case http::status::service_unavailable: return "ServiceUnavailableError";
    default: return "InternalServerError";
  }
}

std::string error_body(http::status status, std::string_view message, std::string_view param) {
  nlohmann::ordered_json err = {{"message", message},
                        {"type", error_type(status)},
                        {"param", param.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(param)},
                        {"code", static_cast<int>(status)}};
  return nlohmann::ordered_json{{"error", std::move(err)}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct HttpExchange::Impl {
  HttpStream& stream;
  const HttpRequest& request;
  double write_timeout;
  bool keep_alive;
  std::shared_ptr<WakeState> wake;
  bool responded = false;  // a response (or a stream's header) went out
  bool failed = false;     // a write failed: the connection is done
  bool gone = false;       // a socket error said the client is gone; kept once seen
  bool peer_eof = false;   // the client sent its FIN: nothing more will come
  bool more_buffered = false;  // the bytes of a next (pipelined) request are already here
  size_t probe_sent = 0;   // bytes of kProbe written; a partial probe is finished first
  const AccessLog* access_log = nullptr;  // set when the log is on
  const std::string* client = nullptr;    // the access log's name of the client
  std::vector<std::pair<std::string, std::string>> extra_headers{};  // add_response_header's
};

namespace {

// After the client's FIN, the connection lives on only for requests it already sent.
bool keep_alive(const HttpExchange::Impl& impl) { return impl.keep_alive && (!impl.peer_eof || impl.more_buffered); }

// The access log's line, when the response starts (as uvicorn: before its first byte is
// written, and not for a client known to be gone).
void log_access(const HttpExchange::Impl& impl, http::status status) {
  if (impl.access_log == nullptr) return;
  impl.access_log->write(*impl.client, impl.request.method_string(), impl.request.target(), impl.request.version(),
                         static_cast<int>(status));
}

// A probe cut short by a full send buffer is completed before the response's first byte.
net::awaitable<bool> finish_probe(HttpExchange::Impl& impl) {
  if (impl.gone) impl.failed = true;
  if (impl.failed) co_return false;
  if (impl.probe_sent == 0 || impl.probe_sent >= kProbe.size()) co_return true;
  beast::error_code ec;
  impl.stream.expires_after(to_duration(impl.write_timeout));
  co_await net::async_write(impl.stream, net::buffer(kProbe.substr(impl.probe_sent)),
                            net::redirect_error(net::use_awaitable, ec));
  impl.stream.expires_never();
  impl.probe_sent = kProbe.size();
  if (ec) impl.failed = true;
  co_return !impl.failed;
}

}  // namespace

const HttpRequest& HttpExchange::request() const { return impl_.request; }

void HttpExchange::add_response_header(std::string name, std::string value) {
  impl_.extra_headers.emplace_back(std::move(name), std::move(value));
}

net::awaitable<void> HttpExchange::respond(http::status status, std::string_view content_type, std::string body) {
  impl_.responded = true;
  if (!co_await finish_probe(impl_)) co_return;
  log_access(impl_, status);
  http::response<http::string_body> res{status, impl_.request.version()};
  res.set(http::field::server, "tessera");
  res.set(http::field::content_type, content_type);
  for (const auto& [name, value] : impl_.extra_headers) res.set(name, value);
  res.keep_alive(keep_alive(impl_));
  res.body() = std::move(body);
  res.prepare_payload();
  beast::error_code ec;
  impl_.stream.expires_after(to_duration(impl_.write_timeout));
  co_await http::async_write(impl_.stream, res, net::redirect_error(net::use_awaitable, ec));
  impl_.stream.expires_never();
  if (ec) impl_.failed = true;
}

net::awaitable<bool> HttpExchange::start_stream(std::string_view content_type) {
  impl_.responded = true;
  if (!co_await finish_probe(impl_)) co_return false;
  log_access(impl_, http::status::ok);
  http::response<http::empty_body> res{http::status::ok, impl_.request.version()};
  res.set(http::field::server, "tessera");
  res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-cache");
  for (const auto& [name, value] : impl_.extra_headers) res.set(name, value);
  res.keep_alive(keep_alive(impl_));
  res.chunked(true);
  http::response_serializer<http::empty_body> sr{res};
  beast::error_code ec;
  impl_.stream.expires_after(to_duration(impl_.write_timeout));
  co_await http::async_write_header(impl_.stream, sr, net::redirect_error(net::use_awaitable, ec));
  impl_.stream.expires_never();
  if (ec) impl_.failed = true;
  co_return !impl_.failed;
}

net::awaitable<bool> HttpExchange::write(std::string_view data) {
  if (impl_.failed) co_return false;
  if (data.empty()) co_return true;  // an empty chunk would end the body
  beast::error_code ec;
  impl_.stream.expires_after(to_duration(impl_.write_timeout));
  co_await net::async_write(impl_.stream, http::make_chunk(net::buffer(data.data(), data.size())),
                            net::redirect_error(net::use_awaitable, ec));
  impl_.stream.expires_never();
  if (ec) impl_.failed = true;
  co_return !impl_.failed;
}

net::awaitable<void> HttpExchange::end_stream() {
  if (impl_.failed) co_return;
  beast::error_code ec;
  impl_.stream.expires_after(to_duration(impl_.write_timeout));
  co_await net::async_write(impl_.stream, http::make_chunk_last(), net::redirect_error(net::use_awaitable, ec));
  impl_.stream.expires_never();
  if (ec) impl_.failed = true;
}

net::awaitable<void> HttpExchange::wait(double seconds) {
  WakeState& w = *impl_.wake;
  if (w.notified.exchange(false)) co_return;
  w.timer.expires_after(to_duration(seconds));
  beast::error_code ec;
  co_await w.timer.async_wait(net::redirect_error(net::use_awaitable, ec));
  w.notified.store(false);
}

std::function<void()> HttpExchange::waker() {
  std::weak_ptr<WakeState> weak = impl_.wake;
  return [weak] {
    auto w = weak.lock();
    if (!w || w->notified.exchange(true)) return;  // already pending: one post is enough
    net::post(w->timer.get_executor(), [w] { w->timer.cancel(); });
  };
}

void HttpExchange::abandon() {
  impl_.responded = true;
  impl_.failed = true;
}

// End of input is not disconnection: a client that sent its request and shut down its
// sending side (shutdown(SHUT_WR), `nc -N`, some proxies) waits for the answer, and one that
// closed its socket sent the same FIN. Only a write tells them apart: a closed socket answers
// data with a reset. So on end of input, before any response byte, an HTTP/1.1 client gets
// an interim "100 Continue" (RFC 9110 15.2: a client must parse 1xx responses it did not ask
// for; HTTP/1.0 clients get none): a half-closed client skips it and later reads its
// answer, a closed one resets the connection, which a later check finds in SO_ERROR or in
// the socket's state (recv() after a FIN reports 0, not the reset). Once a response has
// started, its writes fail when the client is gone. On a Unix socket the probe itself tells
// them apart: sending to a closed peer fails at once (EPIPE), to a half-closed one it works.
bool HttpExchange::client_gone() {
  if (impl_.failed || impl_.gone) return true;
  const int fd = impl_.stream.socket().native_handle();
  int error = 0;
  socklen_t len = sizeof error;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error != 0) return impl_.gone = true;
  char c;
  const ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;  // more input (a pipelined request)
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
    return impl_.gone = true;
  }
  impl_.peer_eof = true;
  if (impl_.responded || impl_.request.version() < 11) return false;
  if (impl_.probe_sent < kProbe.size()) {
    const ssize_t w = ::send(fd, kProbe.data() + impl_.probe_sent, kProbe.size() - impl_.probe_sent,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) impl_.probe_sent += static_cast<size_t>(w);
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return impl_.gone = true;
    return false;
  }
#ifdef __linux__
  // (On a Unix socket this getsockopt fails: the probe's send has already answered.)
  tcp_info info{};
  socklen_t info_len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &info_len) == 0 && info.tcpi_state == TCP_CLOSE) {
    return impl_.gone = true;
  }
#endif
  return false;
}

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler)
    : options_(std::move(options)), handler_(std::move(handler)), access_log_(options_.access_log), acceptor_(ioc_) {}

HttpServer::~HttpServer() {
  beast::error_code ec;
  acceptor_.close(ec);
  remove_socket_file();
}

uint16_t HttpServer::listen() {
  if (!options_.uds.empty()) {
    listen_unix();
    start_accept_loop();
    return 0;
  }
  const tcp::endpoint endpoint(net::ip::make_address(options_.host), options_.port);
  acceptor_.open(StreamProtocol(endpoint.protocol()));
  acceptor_.set_option(net::socket_base::reuse_address(true));
  acceptor_.bind(StreamProtocol::endpoint(endpoint));
  acceptor_.listen(net::socket_base::max_listen_connections);
  acceptor_.non_blocking(true);
  start_accept_loop();
  return as_tcp(acceptor_.local_endpoint()).port();
}

namespace {

std::string errno_text(int error) { return std::strerror(error); }

// A Unix socket's address, or nullopt with the reason in `problem`.
std::optional<sockaddr_un> unix_address(const std::string& path, std::string& problem) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    problem = "the path is " + std::to_string(path.size()) + " bytes long; a Unix socket path holds 1 to " +
              std::to_string(sizeof addr.sun_path - 1);
    return std::nullopt;
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

// Whether a server accepts connections on the socket file at `addr` (a stale file left by a
// process that died refuses them); nullopt when that cannot be told (the error in `problem`).
std::optional<bool> someone_listens(const sockaddr_un& addr, std::string& problem) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    problem = errno_text(errno);
    return std::nullopt;
  }
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int error = rc == 0 ? 0 : errno;
  ::close(fd);
  if (rc == 0 || error == EAGAIN || error == EINPROGRESS) return true;  // EAGAIN: a full backlog
  if (error == ECONNREFUSED || error == ENOENT) return false;
  problem = errno_text(error);
  return std::nullopt;
}

}  // namespace

std::string HttpServer::unix_socket_path_problem(const std::string& path) {
  std::string problem;
  const auto addr = unix_address(path, problem);
  if (!addr) return problem;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::path(path).parent_path();
  if (!dir.empty() && !fs::is_directory(dir, ec)) {
    if (fs::exists(dir, ec)) return dir.string() + " is not a directory";
    return "the directory " + dir.string() + " does not exist";
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? "" : errno_text(errno);
  if (!S_ISSOCK(st.st_mode)) return "the path exists and is not a socket (not replacing it)";
  const auto listening = someone_listens(*addr, problem);
  if (!listening) return "cannot tell whether the socket there is in use: " + problem;
  if (*listening) return "another server is listening on it";
  return "";
}

// As asyncio's create_unix_server (what uvicorn --uds runs): a socket file at the path that no
// server answers on is a stale one and goes; anything else there is an error. The file gets
// the umask's permissions, as vLLM's own bind gives it.
void HttpServer::listen_unix() {
  const std::string& path = options_.uds;
  if (std::string problem = unix_socket_path_problem(path); !problem.empty()) throw std::runtime_error(problem);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    throw std::runtime_error("cannot remove the stale socket file: " + errno_text(errno));
  }
  const net::local::stream_protocol::endpoint endpoint(path);
  acceptor_.open(StreamProtocol(endpoint.protocol()));
  beast::error_code ec;
  acceptor_.bind(StreamProtocol::endpoint(endpoint), ec);
  if (ec == boost::system::errc::permission_denied || ec == boost::system::errc::operation_not_permitted) {
    const std::string dir = std::filesystem::path(path).parent_path().string();
    throw std::runtime_error(ec.message() + " (may this user create files in " + (dir.empty() ? "." : dir) + "?)");
  }
  if (ec) throw std::runtime_error(ec.message());
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    socket_file_bound_ = true;
    socket_file_dev_ = st.st_dev;
    socket_file_ino_ = st.st_ino;
  }
  acceptor_.listen(net::socket_base::max_listen_connections);
  acceptor_.non_blocking(true);
}

// The socket file goes with the listener, unless it is no longer ours (replaced meanwhile).
void HttpServer::remove_socket_file() {
  if (!socket_file_bound_) return;
  socket_file_bound_ = false;
  struct stat st {};
  if (::lstat(options_.uds.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == socket_file_dev_ &&
      st.st_ino == socket_file_ino_) {
    ::unlink(options_.uds.c_str());
  }
}

void HttpServer::start_accept_loop() {
  net::co_spawn(ioc_, accept_loop(), [this](std::exception_ptr e) {
    if (!e) return;
    log_exception("the accept loop", e);
    if (acceptor_.is_open()) start_accept_loop();  // the server keeps accepting
  });
}

void HttpServer::run() {
  std::vector<std::thread> extra;
  for (int i = 1; i < options_.threads; ++i) extra.emplace_back([this] { run_io(); });
  run_io();
  for (auto& t : extra) t.join();
}

// A handler that throws propagates out of run(); the io_context stays usable, so the thread
// logs and runs again instead of taking the process down. Returns after stop().
void HttpServer::run_io() {
  for (;;) {
    try {
      ioc_.run();
      return;
    } catch (...) {
      log_exception("an HTTP handler", std::current_exception());
    }
  }
}

void HttpServer::stop_accepting() {
  accepting_.store(false);
  net::post(ioc_, [this] {
    beast::error_code ec;
    acceptor_.close(ec);
    remove_socket_file();  // new clients find no socket, as after uvicorn's shutdown
  });
}

void HttpServer::stop() { ioc_.stop(); }

net::awaitable<void> HttpServer::accept_loop() {
  for (;;) {
    StreamProtocol::socket socket(net::make_strand(ioc_));
    beast::error_code ec;
    co_await acceptor_.async_accept(socket, net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      if (!acceptor_.is_open()) co_return;
      // Out of file descriptors (or a transient error): let connections close, then retry.
      net::steady_timer pause(ioc_, std::chrono::milliseconds(50));
      co_await pause.async_wait(net::redirect_error(net::use_awaitable, ec));
      continue;
    }
    start_session(std::move(socket));
    // Take every connection already queued before waiting again: under load each wait
    // sits behind the streams' handlers, and a full backlog drops SYNs (seconds of retry).
    for (int i = 0; i < 1024; ++i) {
      StreamProtocol::socket more(net::make_strand(ioc_));
      acceptor_.accept(more, ec);
      if (ec) break;  // would_block: the queue is empty
      start_session(std::move(more));
    }
  }
}

void HttpServer::start_session(StreamProtocol::socket socket) {
  try {
    beast::error_code ec;
    if (options_.uds.empty()) socket.set_option(tcp::no_delay(true), ec);
    auto ex = socket.get_executor();
    net::co_spawn(ex, session(std::move(socket)), [](std::exception_ptr e) { log_exception("a connection", e); });
  } catch (...) {  // out of memory for the coroutine: this connection closes, the loop goes on
    log_exception("starting a connection", std::current_exception());
  }
}

// Any exception in a connection ends that connection only.
net::awaitable<void> HttpServer::session(StreamProtocol::socket socket) {
  const std::string client = access_log_.enabled() ? client_address(socket) : std::string();
  HttpStream stream(std::move(socket));
  std::exception_ptr error;
  try {
    co_await serve(stream, client);
  } catch (...) {
    error = std::current_exception();
  }
  log_exception("a connection", error);
  beast::error_code ec;
  stream.socket().shutdown(net::socket_base::shutdown_send, ec);
  stream.close();
}

net::awaitable<void> HttpServer::serve(HttpStream& stream, const std::string& client) {
  HttpReaderOptions reader_options;
  reader_options.max_header_bytes = options_.max_header_bytes;
  reader_options.max_body_bytes = options_.max_body_bytes;
  reader_options.allowed_origins = options_.allowed_origins;
  HttpRequestReader reader(std::move(reader_options));
  auto wake = std::make_shared<WakeState>(stream.get_executor());
  for (;;) {
    beast::error_code ec;
    if (reader.buffered() == 0) {
      // Idle between requests: wait for the first byte of the next one.
      stream.expires_after(to_duration(options_.keep_alive_timeout));
      const size_t n = co_await stream.async_read_some(reader.prepare(4096), net::redirect_error(net::use_awaitable, ec));
      if (ec) co_return;
      reader.commit(n);
    }
    // The bytes go through the same reader as in parse_http_stream() (the fuzzer's path).
    stream.expires_after(to_duration(options_.request_timeout));
    HttpRequestReader::Event event;
    for (;;) {
      event = reader.parse();
      if (event == HttpRequestReader::Event::need_more) {
        const size_t n =
            co_await stream.async_read_some(reader.prepare(64u << 10), net::redirect_error(net::use_awaitable, ec));
        if (ec) break;
        reader.commit(n);
      } else if (event == HttpRequestReader::Event::expect_continue) {
        http::response<http::empty_body> cont{http::status::continue_, 11};
        co_await http::async_write(stream, cont, net::redirect_error(net::use_awaitable, ec));
        if (ec) break;
      } else {
        break;
      }
    }
    stream.expires_never();
    // A timeout has closed the socket; a client that left mid-request needs no answer.
    if (ec) co_return;
    if (event == HttpRequestReader::Event::error) {
      if (const auto& line = reader.refused_request_line(); line && access_log_.enabled()) {
        access_log_.write(client, line->method, line->target, line->version, static_cast<int>(reader.refusal().status));
      }
      co_await refuse(stream, reader.refusal(), options_.request_timeout);
      co_return;
    }
    HttpRequest request = reader.take_request();
    HttpExchange::Impl impl{stream, request, options_.request_timeout, request.keep_alive() && accepting_.load(), wake};
    impl.more_buffered = reader.buffered() > 0;
    if (access_log_.enabled()) {
      impl.access_log = &access_log_;
      impl.client = &client;
    }
    HttpExchange exchange(impl);
    ActiveGuard active(active_);
    std::string internal_error;
    try {
      co_await handler_(exchange);
    } catch (const std::exception& e) {
      internal_error = e.what();
      if (internal_error.empty()) internal_error = "exception";
    } catch (...) {
      internal_error = "exception of unknown type";
    }
    if (!internal_error.empty() && impl.responded) impl.failed = true;  // mid-stream: drop the connection
    if (!impl.responded) {
      if (internal_error.empty()) internal_error = "the request was not answered";
      std::fprintf(stderr, "tessera: internal error: %s\n", internal_error.c_str());
      co_await exchange.respond(http::status::internal_server_error, "application/json",
                                error_body(http::status::internal_server_error, internal_error));
    }
    // A client that sent its FIN gets the answers to what it sent, then the connection closes.
    if (impl.failed || impl.gone || !keep_alive(impl)) co_return;
  }
}

}  // namespace tessera::server
