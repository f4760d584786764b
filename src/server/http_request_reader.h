// From raw bytes to an HttpRequest or a refusal, without a socket: the HTTP server's session
// moves bytes between the socket and this reader, the fuzzer feeds it bytes directly. Every
// part of a message has a limit before anything is authenticated: the head, each chunk line
// and all chunk extensions, the trailer section, the body, and the bytes of the whole
// request; the buffer of unparsed bytes never grows past buffer_limit().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "server/http_policy.h"

namespace tessera::server {

namespace net = boost::asio;

using HttpRequest = http::request<http::string_body>;

struct HttpReaderOptions {
  size_t max_header_bytes = 64u << 10;  // request line and fields; trailers get the same again
  size_t max_body_bytes = 8u << 20;     // after removing chunked framing
  size_t max_header_fields = 1000;
  size_t max_chunk_extension_bytes = 4096;  // all chunk extensions of one request together
  std::vector<std::string> allowed_origins;  // see origin_allowed()
};

// Longest chunk line (size and extensions) that can be waited for.
inline size_t max_chunk_line_bytes(const HttpReaderOptions& o) { return o.max_chunk_extension_bytes + 64; }
// Bytes a whole request may take on the wire: head, trailers, body, and an allowance for
// chunk framing (64 KiB, and 1/8 of the body limit: chunks of 64 body bytes or more fit).
inline size_t max_request_bytes(const HttpReaderOptions& o) {
  return 2 * o.max_header_bytes + o.max_body_bytes + (64u << 10) + o.max_body_bytes / 8;
}

class HttpRequestReader {
 public:
  enum class Event {
    need_more,        // read more into prepare()/commit(), then parse() again
    expect_continue,  // head of an "Expect: 100-continue" request accepted: send 100, parse() again
    request,          // take_request()
    error,            // refusal(): answer it and close the connection
  };

  explicit HttpRequestReader(HttpReaderOptions options);
  ~HttpRequestReader();
  HttpRequestReader(const HttpRequestReader&) = delete;
  HttpRequestReader& operator=(const HttpRequestReader&) = delete;

  // Room for at most `max_bytes` more input; never past buffer_limit(). parse() reports an
  // error before the buffer fills, so after need_more the room is never empty.
  net::mutable_buffer prepare(size_t max_bytes);
  void commit(size_t n);
  size_t buffered() const { return buffer_.size(); }
  size_t buffer_limit() const { return buffer_limit_; }

  // Parses what is buffered. After request or error, the next call starts the next request
  // (after an error the connection is to be closed instead).
  Event parse();
  // True once a byte of the current request has been parsed (EOF now cuts a request short).
  bool in_request() const;
  HttpRequest take_request();
  const HttpRefusal& refusal() const { return refusal_; }
  // The request line of the request refused, when parsing got past it (the access log's).
  struct RequestLine {
    std::string method;
    std::string target;
    unsigned version = 11;
  };
  const std::optional<RequestLine>& refused_request_line() const { return refused_line_; }
  // Wire bytes of the request just parsed or refused (head, framing, body, trailers).
  size_t request_bytes() const { return request_bytes_; }
  const HttpReaderOptions& options() const { return options_; }

 private:
  class Parser;

  Event fail(http::status status, std::string message);
  Event check_head();

  HttpReaderOptions options_;
  size_t buffer_limit_;
  beast::flat_buffer buffer_;
  std::unique_ptr<Parser> parser_;
  HttpRefusal refusal_{http::status::bad_request, {}};
  std::optional<RequestLine> refused_line_;
  size_t request_bytes_ = 0;
  size_t head_bytes_ = 0;
  bool head_checked_ = false;
  bool after_lf_ = false;  // obs-fold scan: the last head byte was a LF
  size_t resume_at_ = 0;   // buffered bytes the parser needs before it is called again
};

// One parse of a byte stream as the server's session would read it from a socket, in reads
// of the given sizes (cycled; none: 64 KiB): the requests in order, ending at the first
// refusal, at a request that does not keep the connection alive, or at the end of input.
struct HttpParseOutcome {
  HttpRequestReader::Event event;  // request or error; need_more: the input ended mid-request
  std::optional<HttpRequest> request;
  HttpRefusal refusal{http::status::bad_request, {}};
  size_t wire_bytes = 0;
  bool sent_continue = false;
};
std::vector<HttpParseOutcome> parse_http_stream(std::string_view input, const HttpReaderOptions& options,
                                                const std::vector<size_t>& read_sizes = {});

}  // namespace tessera::server
