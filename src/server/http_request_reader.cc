#include "server/http_request_reader.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>

namespace tessera::server {

namespace {

std::string_view find_view(const HttpRequest& m, http::field f) {
  auto it = m.find(f);
  if (it == m.end()) return {};
  return std::string_view(it->value().data(), it->value().size());
}

bool iequals(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return lower(x) == lower(y); });
}

// Beast keeps a field's name and value lengths in 16 bits and throws past that.
constexpr size_t kMaxFieldBytes = 65000;

}  // namespace

// Beast's parser with our own message assembly: the head's fields are counted for the
// policy, trailer fields are counted and dropped (no route reads them, and a field arriving
// after the policy looked at the head must not change what it saw), chunk extensions count
// against a limit, and the body is never reserved from a Content-Length the client has not
// sent yet.
class HttpRequestReader::Parser final : public http::basic_parser<true> {
 public:
  explicit Parser(const HttpReaderOptions& o) : options_(o) {
    header_limit(static_cast<std::uint32_t>(std::min<size_t>(o.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
    body_limit(static_cast<std::uint64_t>(o.max_body_bytes));
  }

  HttpRequest message;
  HttpHeadFacts facts;
  bool in_trailers = false;  // the last chunk's line is parsed: fields now are trailers
  std::optional<HttpRefusal> refusal;  // set by a callback, which also stops the parse
  const char* input = nullptr;          // start of the bytes given to put()
  const char* trailer_start = nullptr;  // first byte after the last chunk's line
  bool request_line = false;            // the request line is parsed (message has it)

 private:
  void refuse(http::status status, std::string message_text, beast::error_code& ec) {
    refusal = HttpRefusal{status, std::move(message_text)};
    ec = http::error::bad_value;
  }

  void on_request_impl(http::verb method, beast::string_view method_str, beast::string_view target, int version,
                       beast::error_code&) override {
    if (method != http::verb::unknown) {
      message.method(method);
    } else {
      message.method_string(method_str);
    }
    message.target(target);
    message.version(version);
    request_line = true;
  }

  void on_response_impl(int, beast::string_view, int, beast::error_code& ec) override { ec = http::error::bad_version; }

  void on_field_impl(http::field name, beast::string_view name_string, beast::string_view value,
                     beast::error_code& ec) override {
    if (in_trailers) {
      trailer_bytes_ += name_string.size() + value.size() + 4;
      if (++trailer_fields_ > options_.max_header_fields || trailer_bytes_ > options_.max_header_bytes) {
        refuse(http::status::request_header_fields_too_large,
               "the trailer section is larger than the limit of " + std::to_string(options_.max_header_bytes) +
                   " bytes or " + std::to_string(options_.max_header_fields) + " fields",
               ec);
      }
      return;
    }
    if (++fields_ > options_.max_header_fields) {
      refuse(http::status::request_header_fields_too_large,
             "more than " + std::to_string(options_.max_header_fields) + " header fields", ec);
      return;
    }
    if (name_string.size() + value.size() > kMaxFieldBytes) {
      refuse(http::status::request_header_fields_too_large,
             "a header field is longer than " + std::to_string(kMaxFieldBytes) + " bytes", ec);
      return;
    }
    switch (name) {
      case http::field::host: ++facts.host_fields; break;
      case http::field::content_length: ++facts.content_length_fields; break;
      case http::field::transfer_encoding: ++facts.transfer_encoding_fields; break;
      case http::field::origin: ++facts.origin_fields; break;
      case http::field::content_type: ++facts.content_type_fields; break;
      default: break;
    }
    message.insert(name, name_string, value);
  }

  void on_header_impl(beast::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, beast::error_code&) override {}

  std::size_t on_body_impl(beast::string_view body, beast::error_code&) override {
    message.body().append(body.data(), body.size());
    return body.size();
  }

  void on_chunk_header_impl(std::uint64_t size, beast::string_view extensions, beast::error_code& ec) override {
    // A chunk line starts where put()'s input does (after the previous chunk's CRLF, which
    // counts too) and its extensions end at its CRLF: the same measure as the reader's
    // check of an unfinished line, so how the bytes were split does not change the answer.
    const char* line_end = extensions.data() + extensions.size();
    if (static_cast<size_t>(line_end - input) > max_chunk_line_bytes(options_)) {
      refuse(http::status::bad_request,
             "a chunk line is longer than " + std::to_string(max_chunk_line_bytes(options_)) + " bytes", ec);
      return;
    }
    extension_bytes_ += extensions.size();
    if (extension_bytes_ > options_.max_chunk_extension_bytes) {
      refuse(http::status::bad_request,
             "chunk extensions longer than " + std::to_string(options_.max_chunk_extension_bytes) + " bytes in all", ec);
      return;
    }
    if (size == 0) {
      in_trailers = true;
      trailer_start = line_end + 2;
    }
  }

  std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, beast::error_code&) override {
    message.body().append(body.data(), body.size());
    return body.size();
  }

  void on_finish_impl(beast::error_code&) override {}

  const HttpReaderOptions& options_;
  size_t fields_ = 0;
  size_t trailer_fields_ = 0;
  size_t trailer_bytes_ = 0;
  size_t extension_bytes_ = 0;
};

HttpRequestReader::HttpRequestReader(HttpReaderOptions options)
    : options_(std::move(options)),
      // At most one of these waits in the buffer: an unfinished head, an unfinished chunk
      // line, or the last chunk with its trailers. Body bytes are consumed as they come.
      buffer_limit_(options_.max_header_bytes + max_chunk_line_bytes(options_) + 4096),
      buffer_(buffer_limit_) {}

HttpRequestReader::~HttpRequestReader() = default;

net::mutable_buffer HttpRequestReader::prepare(size_t max_bytes) {
  return buffer_.prepare(std::min(max_bytes, buffer_limit_ - buffer_.size()));
}

void HttpRequestReader::commit(size_t n) { buffer_.commit(n); }

bool HttpRequestReader::in_request() const { return parser_ != nullptr && parser_->got_some(); }

HttpRequest HttpRequestReader::take_request() {
  HttpRequest request = std::move(parser_->message);
  parser_.reset();
  return request;
}

HttpRequestReader::Event HttpRequestReader::fail(http::status status, std::string message) {
  refusal_ = HttpRefusal{status, std::move(message)};
  refused_line_.reset();
  if (parser_ && parser_->request_line) {
    const HttpRequest& m = parser_->message;
    refused_line_ = RequestLine{std::string(m.method_string()), std::string(m.target()), m.version()};
  }
  parser_.reset();
  return Event::error;
}

HttpRequestReader::Event HttpRequestReader::check_head() {
  head_checked_ = true;
  if (head_bytes_ > options_.max_header_bytes) {
    return fail(http::status::request_header_fields_too_large,
                "request headers are larger than the limit of " + std::to_string(options_.max_header_bytes) + " bytes");
  }
  const HttpRequest& m = parser_->message;
  if (auto refusal = check_framing(m.base(), parser_->facts)) return fail(refusal->status, std::move(refusal->message));
  const auto length = parser_->content_length();
  const bool has_body = parser_->chunked() || (length && *length > 0);
  if (auto refusal = check_origin_and_content_type(m.base(), parser_->facts, has_body, options_.allowed_origins)) {
    return fail(refusal->status, std::move(refusal->message));
  }
  // curl sends "Expect: 100-continue" with bodies over 1 KiB and waits a second for it.
  if (!parser_->is_done() && m.version() >= 11 && iequals(find_view(m, http::field::expect), "100-continue")) {
    return Event::expect_continue;
  }
  return Event::need_more;  // no event: go on parsing
}

HttpRequestReader::Event HttpRequestReader::parse() {
  for (;;) {
    if (parser_ && parser_->is_done()) return Event::request;  // not taken yet
    if (buffer_.size() == 0 || buffer_.size() < resume_at_) return Event::need_more;
    resume_at_ = 0;
    if (!parser_) {
      parser_ = std::make_unique<Parser>(options_);
      request_bytes_ = 0;
      head_bytes_ = 0;
      head_checked_ = false;
      after_lf_ = false;
    }
    const bool in_head = !parser_->is_header_done();
    const bool trailers_before = parser_->in_trailers;
    const net::const_buffer input = buffer_.data();
    parser_->input = static_cast<const char*>(input.data());
    beast::error_code ec;
    size_t used = 0;
    try {
      used = parser_->put(input, ec);
    } catch (const std::length_error&) {
      return fail(http::status::request_header_fields_too_large, "a header field is too large");
    }
    const bool trailers_parsed = !trailers_before && parser_->in_trailers;

    // Obsolete line folding: a LF followed by SP or HTAB inside the head or the trailer
    // section. Beast joins folded lines silently; RFC 9112 5.2 lets a server reject them, and
    // a proxy that does not join them reads different fields than we do.
    if (in_head || trailers_parsed) {
      if (!in_head) after_lf_ = false;
      const char* p = static_cast<const char*>(input.data());
      for (size_t i = 0; i < used; ++i) {
        if (after_lf_ && (p[i] == ' ' || p[i] == '\t')) parser_->facts.obs_fold = true;
        after_lf_ = p[i] == '\n';
      }
    }
    request_bytes_ += used;
    if (in_head) head_bytes_ += used;
    buffer_.consume(used);

    if (parser_->refusal) return fail(parser_->refusal->status, std::move(parser_->refusal->message));
    if (parser_->facts.obs_fold) {
      return fail(http::status::bad_request, "obsolete line folding (a header line that begins with a space or tab)");
    }
    if (trailers_parsed && !ec &&
        static_cast<size_t>(parser_->input + used - parser_->trailer_start) > options_.max_header_bytes) {
      return fail(http::status::request_header_fields_too_large,
                  "the trailer section is larger than the limit of " + std::to_string(options_.max_header_bytes) +
                      " bytes");
    }
    if (request_bytes_ > max_request_bytes(options_)) {
      return fail(http::status::payload_too_large,
                  "the request is larger than the limit of " + std::to_string(max_request_bytes(options_)) +
                      " bytes with its framing");
    }
    if (ec == http::error::need_more) {
      const size_t pending = buffer_.size();
      if (!parser_->is_header_done()) {
        if (head_bytes_ + pending >= options_.max_header_bytes) {
          return fail(http::status::request_header_fields_too_large,
                      "request headers are larger than the limit of " + std::to_string(options_.max_header_bytes) +
                          " bytes");
        }
      } else if (parser_->chunked()) {
        // Waiting for the end of a chunk line, or (once the last chunk's line is complete)
        // for the end of the trailer section. Refused only when the complete message would
        // be (the callbacks' and the check above measure the same bytes): an unfinished line
        // may hold one '\r' of its CRLF beyond the line's measure.
        const std::string_view bytes(static_cast<const char*>(buffer_.data().data()), pending);
        const size_t line_end = pending > 1 ? bytes.find("\r\n", 1) : std::string_view::npos;
        const size_t line = line_end == std::string_view::npos ? (pending > 0 ? pending - 1 : 0) : line_end;
        if (line > max_chunk_line_bytes(options_)) {
          return fail(http::status::bad_request,
                      "a chunk line is longer than " + std::to_string(max_chunk_line_bytes(options_)) + " bytes");
        }
        if (line_end != std::string_view::npos && pending - (line_end + 2) > options_.max_header_bytes) {
          return fail(http::status::request_header_fields_too_large,
                      "the trailer section is larger than the limit of " + std::to_string(options_.max_header_bytes) +
                          " bytes");
        }
        // The last chunk's line is here, its trailer section not yet. Beast 1.74 asserts 5
        // bytes when it resumes there ("\r\n0\r\n"), but a body of only "0\r\n" resumes with
        // 3 or 4 (harmless without assertions); the shortest ending is 5 bytes anyway.
        if (line_end != std::string_view::npos) resume_at_ = 5;
      }
      // Unreachable with the limits above; the last word on the buffer's bound.
      if (pending >= buffer_limit_) return fail(http::status::bad_request, "the request's framing is too large");
      return Event::need_more;
    }
    if (ec) {
      if (ec == http::error::header_limit) {
        return fail(http::status::request_header_fields_too_large,
                    "request headers are larger than the limit of " + std::to_string(options_.max_header_bytes) +
                        " bytes");
      }
      if (ec == http::error::body_limit) {
        return fail(http::status::payload_too_large,
                    "request body is larger than the limit of " + std::to_string(options_.max_body_bytes) + " bytes");
      }
      return fail(http::status::bad_request, "malformed HTTP request: " + ec.message());
    }
    if (parser_->is_header_done() && !head_checked_) {
      const Event e = check_head();
      if (e != Event::need_more) return e;
    }
    if (parser_->is_done()) return Event::request;
    if (used == 0) return Event::need_more;  // no progress without more input
  }
}

std::vector<HttpParseOutcome> parse_http_stream(std::string_view input, const HttpReaderOptions& options,
                                                const std::vector<size_t>& read_sizes) {
  std::vector<HttpParseOutcome> out;
  HttpRequestReader reader(options);
  size_t pos = 0;
  size_t next_read = 0;
  bool sent_continue = false;
  for (;;) {
    const HttpRequestReader::Event event = reader.parse();
    if (event == HttpRequestReader::Event::need_more) {
      if (pos == input.size()) {
        if (reader.in_request() || reader.buffered() > 0) {
          HttpParseOutcome cut;
          cut.event = event;
          cut.wire_bytes = reader.request_bytes();
          out.push_back(std::move(cut));
        }
        break;
      }
      const size_t want =
          read_sizes.empty() ? size_t{64} << 10 : std::max<size_t>(1, read_sizes[next_read++ % read_sizes.size()]);
      const net::mutable_buffer room = reader.prepare(want);
      if (room.size() == 0) throw std::logic_error("HttpRequestReader: need_more with a full buffer");
      const size_t n = std::min(room.size(), input.size() - pos);
      std::memcpy(room.data(), input.data() + pos, n);
      reader.commit(n);
      pos += n;
      continue;
    }
    if (event == HttpRequestReader::Event::expect_continue) {
      sent_continue = true;
      continue;
    }
    HttpParseOutcome o;
    o.event = event;
    o.wire_bytes = reader.request_bytes();
    o.sent_continue = sent_continue;
    sent_continue = false;
    if (event == HttpRequestReader::Event::error) {
      o.refusal = reader.refusal();
      out.push_back(std::move(o));
      break;
    }
    o.request = reader.take_request();
    const bool keep_alive = o.request->keep_alive();
    out.push_back(std::move(o));
    if (!keep_alive) break;
  }
  return out;
}

}  // namespace tessera::server
