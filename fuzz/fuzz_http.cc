// libFuzzer target: the HTTP server's request reader (src/server/http_request_reader.h), the
// code between a connection's bytes and an HttpRequest or a refusal, driven without sockets
// the way the session drives it (parse_http_stream: reads of fuzzed sizes).
//
// Input: the first byte picks a mode. Raw (first byte % 4 == 0): the rest is the byte stream
// itself, so seeds are plain HTTP. Structured: FuzzedDataProvider builds pipelined requests
// from parts that matter to the transport (methods, versions, Host, Transfer-Encoding,
// Content-Length, Expect, Origin, Content-Type, obs-fold, chunked bodies with extensions
// and trailers, raw junk) under fuzzed limits. A request built only from well-formed parts
// within the limits must come back exactly as sent.
//
// Invariants: no crash or exception; each parse ends in a request or a refusal with a 4xx
// status, and only the last one may be a refusal or cut short; an accepted request keeps
// every limit (body, fields, bytes on the wire) and the policy (one Host on HTTP/1.1, only
// chunked framing, a JSON Content-Type on a body, an allowed Origin); and how the bytes are
// split into reads changes nothing but which refusal a refused request gets (TCP segments
// must not decide whether a request is accepted or what it contains).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "server/http_request_reader.h"

namespace {

using tessera::server::HttpParseOutcome;
using tessera::server::HttpReaderOptions;
using tessera::server::HttpRequestReader;
namespace http = boost::beast::http;

#define CHECK(cond)               \
  do {                            \
    if (!(cond)) __builtin_trap(); \
  } while (0)

std::string_view field_value(const tessera::server::HttpRequest& r, http::field f) {
  auto it = r.find(f);
  if (it == r.end()) return {};
  return std::string_view(it->value().data(), it->value().size());
}

size_t count_fields(const tessera::server::HttpRequest& r, http::field f) {
  size_t n = 0;
  for (auto it = r.find(f); it != r.end() && it->name() == f; ++it) ++n;
  return n;
}

// Checks that hold for any input.
void check_outcomes(const std::vector<HttpParseOutcome>& outcomes, const HttpReaderOptions& o) {
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const HttpParseOutcome& out = outcomes[i];
    const bool last = i + 1 == outcomes.size();
    CHECK(out.wire_bytes <= tessera::server::max_request_bytes(o) + tessera::server::max_chunk_line_bytes(o) +
                                o.max_header_bytes + 4096);
    if (out.event == HttpRequestReader::Event::error) {
      CHECK(last);
      const unsigned status = static_cast<unsigned>(out.refusal.status);
      CHECK(status >= 400 && status < 500);
      CHECK(!out.refusal.message.empty());
      continue;
    }
    if (out.event == HttpRequestReader::Event::need_more) {
      CHECK(last);
      continue;
    }
    CHECK(out.event == HttpRequestReader::Event::request);
    CHECK(out.request.has_value());
    const auto& r = *out.request;
    CHECK(r.body().size() <= o.max_body_bytes);
    CHECK(out.wire_bytes <= tessera::server::max_request_bytes(o));
    CHECK(static_cast<size_t>(std::distance(r.begin(), r.end())) <= o.max_header_fields);
    CHECK(r.version() == 10 || r.version() == 11);
    if (r.version() == 11) CHECK(count_fields(r, http::field::host) == 1);
    CHECK(count_fields(r, http::field::host) <= 1);
    CHECK(count_fields(r, http::field::content_length) <= 1);
    const size_t te = count_fields(r, http::field::transfer_encoding);
    CHECK(te <= 1);
    if (te == 1) {
      CHECK(r.version() == 11);
      CHECK(count_fields(r, http::field::content_length) == 0);
    }
    if (!r.body().empty()) {
      CHECK(count_fields(r, http::field::content_type) == 1);
      CHECK(tessera::server::is_json_media_type(field_value(r, http::field::content_type)));
    }
    if (count_fields(r, http::field::origin) > 0) {
      CHECK(count_fields(r, http::field::origin) == 1);
      CHECK(tessera::server::origin_allowed(field_value(r, http::field::origin), field_value(r, http::field::host),
                                            o.allowed_origins));
    }
    if (!last) CHECK(r.keep_alive());
  }
}

std::string head_text(const tessera::server::HttpRequest& r) {
  std::string out(r.method_string().data(), r.method_string().size());
  out += ' ';
  out.append(r.target().data(), r.target().size());
  out += ' ' + std::to_string(r.version()) + '\n';
  for (const auto& f : r) {
    out.append(f.name_string().data(), f.name_string().size());
    out += ':';
    out.append(f.value().data(), f.value().size());
    out += '\n';
  }
  return out;
}

// The same stream read in other pieces: the same requests, then a refusal at the same
// place. A refusal may also read as a cut (Beast reports some errors in a head only once
// the head's end has arrived, and the input ended first).
void check_same(const std::vector<HttpParseOutcome>& a, const std::vector<HttpParseOutcome>& b) {
  CHECK(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const bool request = a[i].event == HttpRequestReader::Event::request;
    CHECK(request == (b[i].event == HttpRequestReader::Event::request));
    if (!request) continue;
    CHECK(a[i].sent_continue == b[i].sent_continue);
    CHECK(a[i].wire_bytes == b[i].wire_bytes);
    CHECK(head_text(*a[i].request) == head_text(*b[i].request));
    CHECK(a[i].request->body() == b[i].request->body());
  }
}

template <size_t N>
std::string pick(FuzzedDataProvider& p, const char* const (&options)[N]) {
  const size_t i = p.ConsumeIntegralInRange<size_t>(0, N);  // N: a fuzzed string instead
  return i < N ? std::string(options[i]) : p.ConsumeRandomLengthString(48);
}

const char* const kMethods[] = {"GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "CONNECT", "PRI", "get"};
const char* const kTargets[] = {"/v1/completions", "/health", "/", "*", "http://x/v1/models", "/a?b=c", "//", ""};
const char* const kVersions[] = {"HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "http/1.1", "HTTP/1.1 "};
const char* const kNames[] = {"Host", "Transfer-Encoding", "Content-Length", "Expect", "Origin", "Content-Type",
                              "Connection", "Authorization", "X-A", "host", "Trailer", "Upgrade"};
const char* const kHosts[] = {"x", "127.0.0.1:8000", "localhost", "a b", "", "[::1]:80", "a/b", "u@h", "LOCALHOST:1"};
const char* const kCodings[] = {"chunked", "gzip", "chunked, gzip", "gzip, chunked", "identity", "", "Chunked", " chunked"};
const char* const kLengths[] = {"0", "5", "5, 5", "-1", "abc", "99999999999999999999", "00", "+3", "1 2"};
const char* const kOrigins[] = {"http://127.0.0.1:8000", "null", "http://evil", "http://localhost", "http://app",
                                "https://app", "http://x", "http://[::1]:80"};
const char* const kTypes[] = {"application/json", "text/plain", "application/json; charset=utf-8",
                              "application/x-www-form-urlencoded", "APPLICATION/JSON", "", "application/jsonx"};
const char* const kConnections[] = {"close", "keep-alive", "upgrade", "close, keep-alive", "x"};

std::string value_for(FuzzedDataProvider& p, std::string_view name, size_t body_size) {
  if (name == "Host" || name == "host") return pick(p, kHosts);
  if (name == "Transfer-Encoding") return pick(p, kCodings);
  if (name == "Content-Length") {
    return p.ConsumeBool() ? std::to_string(body_size) : pick(p, kLengths);
  }
  if (name == "Expect") return p.ConsumeBool() ? "100-continue" : p.ConsumeRandomLengthString(16);
  if (name == "Origin") return pick(p, kOrigins);
  if (name == "Content-Type") return pick(p, kTypes);
  if (name == "Connection") return pick(p, kConnections);
  return p.ConsumeRandomLengthString(p.ConsumeBool() ? 64 : 4096);
}

std::string extension(FuzzedDataProvider& p) {
  switch (p.ConsumeIntegralInRange(0, 4)) {
    case 0: return "";
    case 1: return ";a";
    case 2: return ";n=" + p.ConsumeRandomLengthString(32);
    case 3: return ";q=\"" + p.ConsumeRandomLengthString(32) + "\"";
    default: return ";" + std::string(p.ConsumeIntegralInRange<size_t>(0, 6000), 'e');
  }
}

std::string chunked_body(FuzzedDataProvider& p, const std::string& body, bool clean, size_t* ext_bytes,
                         size_t* trailer_bytes, size_t* trailer_fields) {
  std::string out;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t n = p.ConsumeIntegralInRange<size_t>(1, body.size() - pos);
    std::string ext = clean ? (p.ConsumeBool() ? ";k=v" : "") : extension(p);
    *ext_bytes += ext.size();
    char size[32];
    std::snprintf(size, sizeof size, p.ConsumeBool() ? "%zx" : "%zX", n);
    out += size + ext + "\r\n" + body.substr(pos, n) + "\r\n";
    pos += n;
  }
  const std::string last_ext = clean ? "" : extension(p);
  *ext_bytes += last_ext.size();
  out += (clean || p.ConsumeBool() ? "0" : "000") + last_ext + "\r\n";
  const size_t trailers = p.ConsumeIntegralInRange<size_t>(0, clean ? 2 : 8);
  for (size_t i = 0; i < trailers; ++i) {
    const std::string name = clean ? "X-T" : pick(p, kNames);
    const std::string value = clean ? "v" : p.ConsumeRandomLengthString(p.ConsumeBool() ? 32 : 70000);
    *trailer_bytes += name.size() + value.size() + 4;
    ++*trailer_fields;
    out += name + ": " + value + "\r\n";
    if (!clean && p.ConsumeIntegralInRange(0, 15) == 0) out += " folded\r\n";
  }
  return out + "\r\n";
}

struct Expected {
  http::verb method;
  std::string body;
  bool has_body;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 4 == 0) {
    // Raw mode: the rest is the stream; small default limits keep runs fast.
    HttpReaderOptions o;
    o.max_header_bytes = 4096;
    o.max_body_bytes = 4096;
    o.max_header_fields = 64;
    o.max_chunk_extension_bytes = 256;
    if (data[0] & 4) o.allowed_origins = {"http://app"};
    const std::vector<size_t> reads = {data[0] & 8 ? size_t{1} : size_t{7}, 64, 65536};
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    const auto outcomes = tessera::server::parse_http_stream(input, o, reads);
    check_outcomes(outcomes, o);
    check_same(outcomes, tessera::server::parse_http_stream(input, o));
    return 0;
  }

  FuzzedDataProvider p(data + 1, size - 1);
  HttpReaderOptions o;
  o.max_header_bytes = p.PickValueInArray({size_t{512}, size_t{4096}, size_t{65536}});
  o.max_body_bytes = p.PickValueInArray({size_t{0}, size_t{16}, size_t{4096}, size_t{1} << 20});
  o.max_header_fields = p.PickValueInArray({size_t{8}, size_t{1000}});
  o.max_chunk_extension_bytes = p.PickValueInArray({size_t{0}, size_t{64}, size_t{4096}});
  switch (p.ConsumeIntegralInRange(0, 3)) {
    case 0: break;
    case 1: o.allowed_origins = {"*"}; break;
    case 2: o.allowed_origins = {"http://app"}; break;
    default: o.allowed_origins = {"http://app/", "null"}; break;
  }

  std::string stream;
  std::vector<Expected> expected;
  bool all_clean = true;
  const size_t num_requests = p.ConsumeIntegralInRange<size_t>(1, 4);
  for (size_t r = 0; r < num_requests && p.remaining_bytes() > 0; ++r) {
    const bool clean = p.ConsumeIntegralInRange(0, 3) == 0;
    all_clean = all_clean && clean;
    std::string body = p.ConsumeRandomLengthString(clean ? 64 : 8192);
    const bool chunked = p.ConsumeBool();
    if (clean) {
      const bool post = !body.empty() || chunked || p.ConsumeBool();
      const bool expect = p.ConsumeBool();
      std::string head = std::string(post ? "POST" : "GET") + " /v1/completions HTTP/1.1\r\nHost: x\r\n";
      if (post) head += "Content-Type: application/json\r\n";
      if (expect) head += "Expect: 100-continue\r\n";
      size_t ext_bytes = 0, trailer_bytes = 0, trailer_fields = 0;
      std::string framed;
      if (chunked && post) {
        head += "Transfer-Encoding: chunked\r\n";
        framed = chunked_body(p, body, true, &ext_bytes, &trailer_bytes, &trailer_fields);
      } else {
        if (post || !body.empty()) head += "Content-Length: " + std::to_string(body.size()) + "\r\n";
        framed = body;
      }
      head += "\r\n";
      // Within the limits, or not clean after all.
      if (body.size() > o.max_body_bytes || head.size() >= o.max_header_bytes || ext_bytes > o.max_chunk_extension_bytes ||
          trailer_bytes > o.max_header_bytes || trailer_fields > o.max_header_fields || o.max_header_fields < 4) {
        all_clean = false;
      }
      stream += head + framed;
      expected.push_back({post ? http::verb::post : http::verb::get, body, chunked || !body.empty()});
      continue;
    }
    // Any mix of the parts.
    std::string head = pick(p, kMethods) + " " + pick(p, kTargets) + " " + pick(p, kVersions) + "\r\n";
    const size_t num_fields = p.ConsumeIntegralInRange<size_t>(0, 12);
    for (size_t f = 0; f < num_fields; ++f) {
      const std::string name = pick(p, kNames);
      const std::string value = value_for(p, name, body.size());
      const int fold = p.ConsumeIntegralInRange(0, 15);
      head += name + ":" + (fold == 1 ? "" : " ") + value + (fold == 0 ? "\r\n  more" : "") + (fold == 2 ? "\n" : "\r\n");
    }
    if (p.ConsumeIntegralInRange(0, 7) == 0) head += p.ConsumeRandomLengthString(256);
    head += "\r\n";
    size_t ext_bytes = 0, trailer_bytes = 0, trailer_fields = 0;
    stream += head + (chunked ? chunked_body(p, body, false, &ext_bytes, &trailer_bytes, &trailer_fields) : body);
  }
  std::vector<size_t> reads;
  const size_t num_reads = p.ConsumeIntegralInRange<size_t>(0, 6);
  for (size_t i = 0; i < num_reads; ++i) reads.push_back(p.ConsumeIntegralInRange<size_t>(1, 70000));

  const std::vector<HttpParseOutcome> outcomes = tessera::server::parse_http_stream(stream, o, reads);
  check_outcomes(outcomes, o);
  check_same(outcomes, tessera::server::parse_http_stream(stream, o));
  if (all_clean && !expected.empty()) {
    // Well-formed requests within the limits: every one comes back as sent.
    CHECK(outcomes.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      CHECK(outcomes[i].event == HttpRequestReader::Event::request);
      CHECK(outcomes[i].request->method() == expected[i].method);
      CHECK(outcomes[i].request->target() == "/v1/completions");
      CHECK(outcomes[i].request->body() == expected[i].body);
      const bool expect = !field_value(*outcomes[i].request, http::field::expect).empty();
      CHECK(outcomes[i].sent_continue == (expect && expected[i].has_body));
    }
  }
  return 0;
}
