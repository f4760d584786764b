#include "loader/hf_hub_http.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#ifdef TESSERA_HAVE_OPENSSL
#include <boost/asio/ssl.hpp>
#endif
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#ifdef TESSERA_HAVE_OPENSSL
#include <boost/beast/ssl.hpp>
#endif

namespace tessera::hub {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
#ifdef TESSERA_HAVE_OPENSSL
namespace ssl = net::ssl;
#endif
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

// Per connect, handshake, write and read of one chunk: a stalled peer ends the download.
constexpr auto kStepTimeout = std::chrono::seconds(60);
constexpr int kMaxRedirects = 10;

struct Url {
  bool https = false;
  std::string host;
  std::string port;
  std::string target;
  std::string origin() const { return (https ? "https://" : "http://") + host_header(); }
  std::string host_header() const {
    const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    return port == (https ? "443" : "80") ? h : h + ":" + port;
  }
};

std::optional<Url> parse_url(std::string_view s) {
  Url u;
  if (s.starts_with("https://")) {
    u.https = true;
    s.remove_prefix(8);
  } else if (s.starts_with("http://")) {
    s.remove_prefix(7);
  } else {
    return std::nullopt;
  }
  s = s.substr(0, s.find('#'));
  const size_t slash = s.find('/');
  std::string_view authority = s.substr(0, slash);
  u.target = slash == std::string_view::npos ? "/" : std::string(s.substr(slash));
  if (authority.empty() || authority.find('@') != std::string_view::npos) return std::nullopt;
  std::string_view port;
  if (authority.front() == '[') {  // an IPv6 literal
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    u.host = authority.substr(1, close - 1);
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return std::nullopt;
    if (!rest.empty()) port = rest.substr(1);
  } else {
    const size_t colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (u.host.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  u.port = port.empty() ? (u.https ? "443" : "80") : std::string(port);
  if (std::stoi(u.port) > 65535) return std::nullopt;
  return u;
}

// Where a redirect points: absolute, scheme-relative or a path on the same origin.
std::string join_location(const Url& from, const std::string& location) {
  if (location.starts_with("http://") || location.starts_with("https://")) return location;
  if (location.starts_with("//")) return (from.https ? "https:" : "http:") + location;
  if (location.starts_with("/")) return from.origin() + location;
  const size_t dir = from.target.rfind('/');
  return from.origin() + from.target.substr(0, dir + 1) + location;
}

std::string clean_etag(std::string_view e) {
  if (e.starts_with("W/")) e.remove_prefix(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return std::string(e);
}

// Runs one asynchronous operation to its end on `ioc`: Beast's deadlines (tcp_stream's
// expires_after) apply to asynchronous operations only.
template <class Start>
error_code run_op(net::io_context& ioc, Start&& start) {
  error_code result = net::error::operation_aborted;
  start([&result](error_code ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}

Status io_error(const Url& u, const char* what, const error_code& ec) {
  const std::string why = ec == beast::error::timeout ? "timed out" : ec.message();
  return Status::error(std::string(what) + " " + u.origin() + ": " + why);
}

struct Hop {
  HttpReply reply;
  std::string linked_etag;
  std::string location;
};

bool is_redirect(int status) { return status == 301 || status == 302 || status == 303 || status == 307 || status == 308; }

// Writes the request and reads the reply on a connected stream; the 2xx body into `sink`.
template <class Stream>
Result<Hop> exchange(net::io_context& ioc, Stream& stream, const Url& u, const std::string& token, const BodySink* sink,
                     size_t max_body) {
  auto& lowest = beast::get_lowest_layer(stream);
  http::request<http::empty_body> req{http::verb::get, u.target, 11};
  req.set(http::field::host, u.host_header());
  req.set(http::field::user_agent, "tessera/hf-hub");
  req.set(http::field::accept_encoding, "identity");
  if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
  lowest.expires_after(kStepTimeout);
  if (error_code ec = run_op(ioc, [&](auto h) { http::async_write(stream, req, h); })) return io_error(u, "cannot send to", ec);

  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.header_limit(256 * 1024);
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  lowest.expires_after(kStepTimeout);
  if (error_code ec = run_op(ioc, [&](auto h) { http::async_read_header(stream, buffer, parser, h); })) {
    return io_error(u, "no reply from", ec);
  }
  auto& res = parser.get();
  Hop hop;
  hop.reply.status = res.result_int();
  hop.reply.etag = clean_etag(res[http::field::etag]);
  hop.linked_etag = clean_etag(res["X-Linked-Etag"]);
  hop.reply.error_code = std::string(res["X-Error-Code"]);
  hop.reply.error_message = std::string(res["X-Error-Message"]);
  hop.location = std::string(res[http::field::location]);
  if (is_redirect(hop.reply.status)) return hop;  // its body says nothing; the connection closes

  const bool to_sink = hop.reply.status / 100 == 2 && sink != nullptr;
  if (to_sink && sink->on_start) sink->on_start(parser.content_length().value_or(0));
  std::vector<char> chunk(1 << 16);
  while (!parser.is_done()) {
    res.body().data = chunk.data();
    res.body().size = chunk.size();
    lowest.expires_after(kStepTimeout);
    error_code ec = run_op(ioc, [&](auto h) { http::async_read(stream, buffer, parser, h); });
    if (ec == http::error::need_buffer) ec = {};
    if (ec) return io_error(u, "reply cut short from", ec);
    const size_t n = chunk.size() - res.body().size;
    if (to_sink) {
      if (Status s = sink->on_data(chunk.data(), n); !s.ok()) return s;
    } else if (hop.reply.body.size() + n <= max_body) {
      hop.reply.body.append(chunk.data(), n);
    } else if (hop.reply.status / 100 == 2) {
      return Status::error("reply from " + u.origin() + " is larger than " + std::to_string(max_body) + " bytes");
    }
  }
  return hop;
}

Result<Hop> fetch_once(const Url& u, const std::string& token, const BodySink* sink, size_t max_body) {
  net::io_context ioc;
  error_code ec;
  tcp::resolver resolver(ioc);
  const auto endpoints = resolver.resolve(u.host, u.port, ec);
  if (ec) return io_error(u, "cannot resolve", ec);
  if (!u.https) {
    beast::tcp_stream stream(ioc);
    stream.expires_after(kStepTimeout);
    if ((ec = run_op(ioc, [&](auto h) { stream.async_connect(endpoints, h); }))) return io_error(u, "cannot connect to", ec);
    return exchange(ioc, stream, u, token, sink, max_body);
  }
#ifndef TESSERA_HAVE_OPENSSL
  return Status::error("cannot fetch " + u.host + " over https: this build has no OpenSSL (install libssl-dev and "
                       "rebuild), so it reaches only http endpoints (HF_ENDPOINT) or the local cache");
#else
  ssl::context ctx(ssl::context::tls_client);
  ctx.set_default_verify_paths();  // the system's CAs, or SSL_CERT_FILE / SSL_CERT_DIR
  ctx.set_verify_mode(ssl::verify_peer);
  beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
  if (!SSL_set_tlsext_host_name(stream.native_handle(), u.host.c_str())) {
    return Status::error("TLS: cannot set the server name " + u.host);
  }
  stream.set_verify_callback(ssl::host_name_verification(u.host));
  beast::get_lowest_layer(stream).expires_after(kStepTimeout);
  if ((ec = run_op(ioc, [&](auto h) { beast::get_lowest_layer(stream).async_connect(endpoints, h); }))) {
    return io_error(u, "cannot connect to", ec);
  }
  beast::get_lowest_layer(stream).expires_after(kStepTimeout);
  if ((ec = run_op(ioc, [&](auto h) { stream.async_handshake(ssl::stream_base::client, h); }))) {
    return io_error(u, "TLS handshake failed with", ec);
  }
  return exchange(ioc, stream, u, token, sink, max_body);
#endif
}

}  // namespace

Result<HttpReply> http_get(const std::string& url, const std::string& token, const BodySink* sink, size_t max_body) {
  auto first = parse_url(url);
  if (!first) return Status::error("not an http(s) URL: " + url);
  const std::string token_origin = first->origin();
  std::string current = url;
  std::string linked_etag, first_etag;
  for (int hops = 0; hops <= kMaxRedirects; ++hops) {
    auto u = parse_url(current);
    if (!u) return Status::error("bad redirect to " + current);
    auto hop = fetch_once(*u, u->origin() == token_origin ? token : "", sink, max_body);
    if (!hop.ok()) return hop.status();
    if (linked_etag.empty()) linked_etag = hop->linked_etag;
    if (hops == 0) first_etag = hop->reply.etag;
    if (is_redirect(hop->reply.status) && !hop->location.empty()) {
      current = join_location(*u, hop->location);
      continue;
    }
    HttpReply reply = std::move(hop->reply);
    // The Hub names a file's blob by the first reply's ETag (X-Linked-Etag for LFS files).
    if (!linked_etag.empty()) {
      reply.etag = linked_etag;
    } else if (!first_etag.empty()) {
      reply.etag = first_etag;
    }
    return reply;
  }
  return Status::error("more than " + std::to_string(kMaxRedirects) + " redirects from " + url);
}

std::string url_encode(const std::string& s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace tessera::hub
