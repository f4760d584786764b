// HTTP/1.1 client of `tessera bench serve` (see bench_serve_client.h).
#include "cli/bench_serve_client.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/http/span_body.hpp>
#include <nlohmann/json.hpp>

// GCC 12 misreads the matched operator new/delete of Boost 1.74's coroutine frames.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace tessera::cli::bench_serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using nlohmann::json;

namespace {

constexpr size_t kReadChunk = 4096;     // body bytes handed over per read
constexpr size_t kMaxErrorBody = 4096;  // of a non-200 answer, kept for the message

using StreamParser = http::response_parser<http::buffer_body>;
using PostRequest = http::request<http::span_body<const char>>;

auto with_ec(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Splits a text/event-stream into events and hands each event's data (its `data:` lines
// joined by '\n') to on_event, which returns false to stop reading.
class SseSplitter {
 public:
  template <typename OnEvent>
  bool feed(std::string_view bytes, OnEvent&& on_event) {
    pending_.append(bytes);
    size_t line_start = 0;
    bool keep_going = true;
    for (size_t eol; keep_going && (eol = pending_.find('\n', line_start)) != std::string::npos; line_start = eol + 1) {
      std::string_view line(pending_.data() + line_start, eol - line_start);
      if (line.ends_with('\r')) line.remove_suffix(1);
      if (line.empty()) {
        if (has_data_) keep_going = on_event(std::string_view(data_));
        data_.clear();
        has_data_ = false;
      } else if (line.starts_with("data:")) {
        line.remove_prefix(5);
        if (line.starts_with(' ')) line.remove_prefix(1);
        if (has_data_) data_ += '\n';
        data_.append(line);
        has_data_ = true;
      }  // `event:`, `id:`, `retry:` and `:` comments carry nothing the benchmark needs
    }
    pending_.erase(0, line_start);
    return keep_going;
  }

 private:
  std::string pending_;  // bytes after the last complete line
  std::string data_;     // data of the event being assembled
  bool has_data_ = false;
};

// What the benchmark needs from one streamed chunk.
struct EventFacts {
  bool is_error = false;  // an "error" member or "object": "error"
  bool has_text = false;  // choices[0].text, .delta.content or .delta.reasoning_content non-empty
  int64_t prompt_tokens = -1;      // usage, when present
  int64_t completion_tokens = -1;
};

// Reads EventFacts off a chunk without building a DOM: every event of every stream passes
// here, tens of thousands a second, where nlohmann::json::parse would be most of the
// client's work. Strings stay undecoded: a raw string is empty exactly when its value is.
class EventScanner {
 public:
  explicit EventScanner(std::string_view text) : text_(text) {}

  // nullopt when the chunk is not one well-formed JSON object.
  std::optional<EventFacts> scan() {
    EventFacts facts;
    const bool ok = members([&](std::string_view key) { return top_level_member(key, facts); }) && at_end();
    return ok ? std::optional(facts) : std::nullopt;
  }

 private:
  static constexpr int kMaxDepth = 64;

  bool top_level_member(std::string_view key, EventFacts& facts) {
    if (key == "error") {
      facts.is_error = !next_is('n');  // null is no error
      return skip_value();
    }
    if (key == "object") {
      std::string_view object;
      if (!next_is('"')) return skip_value();
      if (!string(&object)) return false;
      facts.is_error = facts.is_error || object == "error";
      return true;
    }
    if (key == "usage" && next_is('{')) {
      return members([&](std::string_view k) {
        if (k == "prompt_tokens") return integer(&facts.prompt_tokens);
        if (k == "completion_tokens") return integer(&facts.completion_tokens);
        return skip_value();
      });
    }
    if (key == "choices" && next_is('[')) {
      bool first = true;
      return elements([&] {
        if (!std::exchange(first, false) || !next_is('{')) return skip_value();
        return members([&](std::string_view k) { return choice_member(k, facts); });
      });
    }
    return skip_value();
  }

  bool choice_member(std::string_view key, EventFacts& facts) {
    if (key == "text") return text_value(facts);
    if (key == "delta" && next_is('{'))
      return members([&](std::string_view k) {
        return k == "content" || k == "reasoning_content" ? text_value(facts) : skip_value();
      });
    return skip_value();
  }

  bool text_value(EventFacts& facts) {
    if (!next_is('"')) return skip_value();  // null
    std::string_view text;
    if (!string(&text)) return false;
    facts.has_text = facts.has_text || !text.empty();
    return true;
  }

  // {"key": value, ...}: on_member(key) consumes the value.
  template <typename OnMember>
  bool members(OnMember&& on_member) {
    if (!consume('{') || !deeper()) return false;
    bool ok = consume('}');
    if (!ok) {
      do {
        std::string_view key;
        if (!string(&key) || !consume(':') || !on_member(key)) return false;
      } while (consume(','));
      ok = consume('}');
    }
    --depth_;
    return ok;
  }

  // [value, ...]: on_element() consumes each value.
  template <typename OnElement>
  bool elements(OnElement&& on_element) {
    if (!consume('[') || !deeper()) return false;
    bool ok = consume(']');
    if (!ok) {
      do {
        if (!on_element()) return false;
      } while (consume(','));
      ok = consume(']');
    }
    --depth_;
    return ok;
  }

  bool skip_value() {
    skip_space();
    if (pos_ >= text_.size()) return false;
    switch (text_[pos_]) {
      case '{': return members([&](std::string_view) { return skip_value(); });
      case '[': return elements([&] { return skip_value(); });
      case '"': {
        std::string_view ignored;
        return string(&ignored);
      }
      default: return scalar(nullptr);
    }
  }

  // A string's raw contents, escapes left in place.
  bool string(std::string_view* raw) {
    if (!consume('"')) return false;
    const size_t start = pos_;
    for (; pos_ < text_.size(); ++pos_) {
      if (text_[pos_] == '\\') {
        ++pos_;
      } else if (text_[pos_] == '"') {
        *raw = text_.substr(start, pos_ - start);
        ++pos_;
        return true;
      }
    }
    return false;
  }

  // A number, true, false or null; *token (if given) gets its text.
  bool scalar(std::string_view* token) {
    skip_space();
    const size_t start = pos_;
    while (pos_ < text_.size() && is_scalar_char(text_[pos_])) ++pos_;
    if (token) *token = text_.substr(start, pos_ - start);
    return pos_ > start;
  }

  bool integer(int64_t* value) {
    if (next_is('{') || next_is('[') || next_is('"')) return skip_value();
    std::string_view token;
    if (!scalar(&token)) return false;
    int64_t parsed = 0;
    const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), parsed);
    if (error == std::errc() && end == token.data() + token.size()) *value = parsed;  // else null, 1.5, ...
    return true;
  }

  static bool is_scalar_char(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '+' || c == '.';
  }
  bool deeper() { return ++depth_ <= kMaxDepth; }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool next_is(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool consume(char c) {
    if (!next_is(c)) return false;
    ++pos_;
    return true;
  }
  bool at_end() {
    skip_space();
    return pos_ == text_.size();
  }

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
};

// The message of an OpenAI error ({"error": {"message": ...}}, or vLLM's older
// {"object": "error", "message": ...}); the text itself when it is no such JSON.
std::string error_message_of(std::string_view text) {
  const json parsed = json::parse(text, nullptr, false);
  if (parsed.is_object()) {
    const json* holder = &parsed;
    if (const auto error = parsed.find("error"); error != parsed.end()) {
      if (error->is_string()) return error->get<std::string>();
      holder = &*error;
    }
    if (holder->is_object())
      if (const auto message = holder->find("message"); message != holder->end() && message->is_string())
        return message->get<std::string>();
  }
  return std::string(text.substr(0, 200));
}

// Turns the events of one streamed completion into its StreamResult.
class EventReader {
 public:
  EventReader(StreamResult& result, int64_t disconnect_after) : result_(result), disconnect_after_(disconnect_after) {}

  // Body bytes that arrived at `now`; false once the client should hang up.
  bool feed(std::string_view bytes, Clock::time_point now) {
    last_arrival_ = now;
    return splitter_.feed(bytes, [&](std::string_view data) { return on_event(data, now); });
  }

  bool saw_done() const { return saw_done_; }
  bool saw_error() const { return saw_error_; }
  bool wants_disconnect() const { return wants_disconnect_; }
  Clock::time_point last_arrival() const { return last_arrival_; }

 private:
  bool on_event(std::string_view data, Clock::time_point now) {
    if (data == "[DONE]") {
      saw_done_ = true;
      return true;
    }
    const std::optional<EventFacts> facts = EventScanner(data).scan();
    if (!facts) {
      note_error("malformed event: " + std::string(data.substr(0, 200)));
      return true;
    }
    if (facts->is_error) {
      note_error(error_message_of(data));
      return true;
    }
    if (facts->prompt_tokens >= 0) result_.prompt_tokens = facts->prompt_tokens;
    if (facts->completion_tokens >= 0) result_.completion_tokens = facts->completion_tokens;
    if (facts->has_text) on_content(now);
    wants_disconnect_ = disconnect_after_ > 0 && result_.content_events >= disconnect_after_;
    return !wants_disconnect_;
  }

  void on_content(Clock::time_point now) {
    if (result_.content_events == 0)
      result_.ttft_s = seconds_between(result_.start, now);
    else
      result_.itls_s.push_back(seconds_between(last_content_, now));
    last_content_ = now;
    ++result_.content_events;
  }

  void note_error(std::string message) {
    if (!saw_error_) result_.error_message = std::move(message);
    saw_error_ = true;
  }

  SseSplitter splitter_;
  StreamResult& result_;
  int64_t disconnect_after_;
  Clock::time_point last_content_;
  Clock::time_point last_arrival_;
  bool saw_done_ = false;
  bool saw_error_ = false;
  bool wants_disconnect_ = false;
};

// What a reused keep-alive connection reports when the server closed it while it was idle.
bool is_stale_connection_error(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe;
}

}  // namespace

std::optional<BaseUrl> parse_base_url(std::string_view url, std::string* error) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) {
    *error = "--base-url must start with http:// (https is not supported)";
    return std::nullopt;
  }
  url.remove_prefix(kScheme.size());
  const size_t slash = url.find('/');
  const std::string_view authority = url.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : url.substr(slash);
  while (path.ends_with('/')) path.remove_suffix(1);

  BaseUrl out;
  out.authority = std::string(authority);
  out.path_prefix = std::string(path);
  std::string_view port;
  if (authority.starts_with('[')) {  // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      *error = "unbalanced [ in --base-url";
      return std::nullopt;
    }
    out.host = std::string(authority.substr(1, close - 1));
    const std::string_view rest = authority.substr(close + 1);
    if (rest.starts_with(':')) port = rest.substr(1);
  } else {
    const size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (!port.empty()) out.port = std::string(port);
  const bool port_is_number =
      !out.port.empty() && out.port.size() <= 5 && out.port.find_first_not_of("0123456789") == std::string::npos;
  if (out.host.empty() || !port_is_number) {
    *error = "cannot read HOST[:PORT] in --base-url http://" + std::string(authority);
    return std::nullopt;
  }
  return out;
}

struct HttpClient::Connection {
  explicit Connection(asio::io_context& io) : socket(io) {}
  tcp::socket socket;
  beast::flat_buffer buffer;  // bytes read past the current parse position
  Clock::time_point last_activity;
  bool connected = false;
  bool reused = false;     // taken from the pool: the server may have closed it meanwhile
  bool timed_out = false;  // the idle sweep cancelled its operations
};

// A connection in use by one request: watched by the idle sweep while held, closed when
// dropped unless given back to the pool.
class HttpClient::Lease {
 public:
  Lease(HttpClient& client, std::unique_ptr<Connection> connection)
      : client_(client), connection_(connection ? std::move(connection) : std::make_unique<Connection>(client.io_)) {
    connection_->last_activity = Clock::now();
    client_.watch(connection_.get());
  }
  ~Lease() {
    if (connection_) client_.unwatch(connection_.get());
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  Connection& operator*() const { return *connection_; }
  Connection* operator->() const { return connection_.get(); }

  void give_back() {
    client_.unwatch(connection_.get());
    connection_->reused = true;
    client_.idle_.push_back(std::move(connection_));
  }

  // The error an operation reported, or a timeout when the idle sweep caused it.
  error_code blame(error_code ec) const { return connection_->timed_out ? error_code(beast::error::timeout) : ec; }

 private:
  HttpClient& client_;
  std::unique_ptr<Connection> connection_;
};

namespace {

std::string failure_kind_of(const error_code& ec, const char* otherwise) {
  return ec == beast::error::timeout ? "timeout" : otherwise;
}

}  // namespace

HttpClient::HttpClient(asio::io_context& io, BaseUrl url, std::string api_key, std::chrono::milliseconds idle_timeout)
    : io_(io),
      url_(std::move(url)),
      authorization_(api_key.empty() ? std::string() : "Bearer " + api_key),
      idle_timeout_(idle_timeout),
      sweep_timer_(io) {}

HttpClient::~HttpClient() = default;

bool HttpClient::resolve(std::string* error) {
  error_code ec;
  endpoints_ = tcp::resolver(io_).resolve(url_.host, url_.port, ec);
  if (ec) *error = "cannot resolve " + url_.host + ": " + ec.message();
  return !ec;
}

std::unique_ptr<HttpClient::Connection> HttpClient::take_idle() {
  if (idle_.empty()) return nullptr;
  std::unique_ptr<Connection> connection = std::move(idle_.back());
  idle_.pop_back();
  return connection;
}

asio::awaitable<error_code> HttpClient::open(Connection& connection) {
  error_code ec;
  co_await asio::async_connect(connection.socket, endpoints_, with_ec(ec));
  if (ec) co_return ec;
  error_code ignored;
  connection.socket.set_option(tcp::no_delay(true), ignored);
  connection.buffer.reserve(kReadChunk);
  connection.connected = true;
  co_return ec;
}

void HttpClient::watch(Connection* connection) {
  watched_.insert(connection);
  if (sweeping_) return;
  sweeping_ = true;
  asio::co_spawn(io_, sweep_idle_connections(), asio::detached);
}

void HttpClient::unwatch(Connection* connection) {
  watched_.erase(connection);
  if (watched_.empty()) sweep_timer_.cancel();  // lets io_context::run return promptly
}

asio::awaitable<void> HttpClient::sweep_idle_connections() {
  const auto period = std::clamp<std::chrono::milliseconds>(idle_timeout_ / 4, std::chrono::milliseconds(10),
                                                            std::chrono::milliseconds(1000));
  error_code ec;
  while (!watched_.empty()) {
    sweep_timer_.expires_after(period);
    co_await sweep_timer_.async_wait(with_ec(ec));
    const auto now = Clock::now();
    for (Connection* connection : watched_) {
      if (connection->timed_out || now - connection->last_activity < idle_timeout_) continue;
      connection->timed_out = true;
      error_code ignored;
      connection->socket.cancel(ignored);  // its pending operation ends with operation_aborted
    }
  }
  sweeping_ = false;
}

namespace {

// Reads the body of the response whose header `parser` holds, handing each piece to
// on_bytes(bytes, arrival time) until it returns false or the body ends. Reads the socket
// itself and feeds the parser by hand: per event, beast's composed async_read_some cost
// about as much as the rest of the client's work.
template <typename ConnectionT, typename OnBytes>
asio::awaitable<error_code> read_body(ConnectionT& connection, StreamParser& parser, OnBytes on_bytes) {
  std::array<char, kReadChunk> body;
  beast::flat_buffer& input = connection.buffer;  // may hold body bytes read with the header
  bool need_input = input.size() == 0;
  error_code ec;
  parser.eager(true);  // parse every complete chunk in the input, not one at a time
  while (!parser.is_done()) {
    if (need_input) {
      const size_t n = co_await connection.socket.async_read_some(input.prepare(kReadChunk), with_ec(ec));
      input.commit(n);
      connection.last_activity = Clock::now();
      if (ec == asio::error::eof) {
        parser.put_eof(ec);  // ends a body delimited by the close, else partial_message
        if (!ec) continue;
      }
      if (ec) co_return ec;
    }
    parser.get().body().data = body.data();
    parser.get().body().size = body.size();
    input.consume(parser.put(input.data(), ec));
    need_input = ec == http::error::need_more || input.size() == 0;
    if (ec == http::error::need_more || ec == http::error::need_buffer) ec = {};
    const size_t received = body.size() - parser.get().body().size;
    if (received > 0 && !on_bytes(std::string_view(body.data(), received), connection.last_activity)) break;
    if (ec) co_return ec;
  }
  co_return error_code{};
}

template <typename ConnectionT>
asio::awaitable<error_code> send_and_read_header(ConnectionT& connection, const PostRequest& request,
                                                 StreamParser& parser) {
  error_code ec;
  co_await http::async_write(connection.socket, request, with_ec(ec));
  if (ec) co_return ec;
  co_await http::async_read_header(connection.socket, connection.buffer, parser, with_ec(ec));
  connection.last_activity = Clock::now();
  co_return ec;
}

}  // namespace

asio::awaitable<SimpleResponse> HttpClient::get(std::string path) {
  SimpleResponse out;
  Lease lease(*this, nullptr);
  error_code ec = co_await open(*lease);
  http::request<http::empty_body> request{http::verb::get, path, 11};
  request.set(http::field::host, url_.authority);
  request.set(http::field::connection, "close");
  if (!authorization_.empty()) request.set(http::field::authorization, authorization_);
  if (!ec) co_await http::async_write(lease->socket, request, with_ec(ec));
  http::response<http::string_body> response;
  if (!ec) co_await http::async_read(lease->socket, lease->buffer, response, with_ec(ec));
  if (ec) {
    out.error_message = lease.blame(ec).message();
    co_return out;
  }
  out.status = response.result_int();
  out.body = std::move(response.body());
  co_return out;
}

asio::awaitable<StreamResult> HttpClient::stream(const std::string& path, const std::string& body,
                                                 int64_t disconnect_after) {
  PostRequest request{http::verb::post, path, 11};
  request.set(http::field::host, url_.authority);
  request.set(http::field::content_type, "application/json");
  request.set(http::field::accept, "text/event-stream");
  if (!authorization_.empty()) request.set(http::field::authorization, authorization_);
  request.body() = {body.data(), body.size()};
  request.prepare_payload();

  StreamResult result;
  result.start = Clock::now();
  std::optional<Lease> lease;
  std::optional<StreamParser> parser;
  for (int attempt = 0;; ++attempt) {
    // A retry takes a new connection, not the next pooled one, likely just as stale.
    lease.emplace(*this, attempt == 0 ? take_idle() : nullptr);
    error_code ec;
    if (!(*lease)->connected) ec = co_await open(**lease);
    if (ec) {
      ec = lease->blame(ec);
      result.failure_kind = failure_kind_of(ec, "connection error");
      result.error_message = "connect: " + ec.message();
      co_return result;
    }
    parser.emplace();
    parser->body_limit(std::numeric_limits<std::uint64_t>::max());  // a long stream is no attack
    ec = co_await send_and_read_header(**lease, request, *parser);
    if (!ec) break;
    // The server may have closed a pooled connection while it sat idle: one more try.
    if (!((*lease)->reused && attempt == 0 && is_stale_connection_error(ec))) {
      ec = lease->blame(ec);
      result.failure_kind = failure_kind_of(ec, "connection error");
      result.error_message = "before the response: " + ec.message();
      co_return result;
    }
  }

  if (const int status = parser->get().result_int(); status != 200) {
    std::string error_body;
    const error_code ec = co_await read_body(**lease, *parser, [&](std::string_view bytes, Clock::time_point) {
      error_body.append(bytes.substr(0, kMaxErrorBody - std::min(kMaxErrorBody, error_body.size())));
      return true;
    });
    result.failure_kind = std::to_string(status);
    result.error_message = "HTTP " + std::to_string(status) + ": " + error_message_of(error_body);
    if (!ec && parser->keep_alive()) lease->give_back();
    co_return result;
  }
  if (disconnect_after == 0) {  // hang up before the first token: aborts a queued request
    result.outcome = Outcome::kDisconnected;
    co_return result;  // dropping the lease closes the socket
  }

  EventReader reader(result, disconnect_after);
  error_code ec = co_await read_body(**lease, *parser,
                                     [&](std::string_view bytes, Clock::time_point now) { return reader.feed(bytes, now); });
  result.latency_s = seconds_between(result.start, reader.last_arrival());
  if (reader.wants_disconnect()) {
    result.outcome = Outcome::kDisconnected;
    co_return result;
  }
  if (ec) {
    ec = lease->blame(ec);
    result.failure_kind = failure_kind_of(ec, "stream error");
    result.error_message = "mid-stream: " + ec.message();
    co_return result;
  }
  if (reader.saw_error()) {
    result.failure_kind = "error event";
  } else if (!reader.saw_done()) {
    result.failure_kind = "incomplete stream";
    result.error_message = "the stream ended without data: [DONE]";
  } else if (result.content_events == 0) {
    result.failure_kind = "no tokens";
    result.error_message = "no event carried text";
  } else {
    result.outcome = Outcome::kSuccess;
  }
  if (parser->keep_alive()) lease->give_back();
  co_return result;
}

}  // namespace tessera::cli::bench_serve
