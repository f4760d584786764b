// The access log's lines (src/server/access_log.h): uvicorn's format, byte for byte, with the
// request target quoted as uvicorn quotes it, so no control character from a client reaches
// the log; vLLM's endpoint filter and log levels; the request line of a refused request.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "server/access_log.h"
#include "server/http_request_reader.h"

namespace tessera::server {
namespace {

TEST(AccessLog, LineIsUvicornsFormat) {
  EXPECT_EQ(access_log_line("127.0.0.1:54321", "POST", "/v1/completions", 11, 200),
            "INFO:     127.0.0.1:54321 - \"POST /v1/completions HTTP/1.1\" 200 OK\n");
  EXPECT_EQ(access_log_line("::1:8080", "GET", "/v1/models", 10, 404),
            "INFO:     ::1:8080 - \"GET /v1/models HTTP/1.0\" 404 Not Found\n");
  // A Unix-socket client has no address: uvicorn prints an empty one.
  EXPECT_EQ(access_log_line("", "GET", "/health", 11, 200), "INFO:      - \"GET /health HTTP/1.1\" 200 OK\n");
}

TEST(AccessLog, PhrasesArePythons) {
  EXPECT_EQ(status_phrase(200), "OK");
  EXPECT_EQ(status_phrase(400), "Bad Request");
  EXPECT_EQ(status_phrase(401), "Unauthorized");
  EXPECT_EQ(status_phrase(413), "Request Entity Too Large");
  EXPECT_EQ(status_phrase(415), "Unsupported Media Type");
  EXPECT_EQ(status_phrase(431), "Request Header Fields Too Large");
  EXPECT_EQ(status_phrase(503), "Service Unavailable");
  EXPECT_EQ(status_phrase(599), "");
  EXPECT_EQ(access_log_line("h:1", "GET", "/", 11, 599), "INFO:     h:1 - \"GET / HTTP/1.1\" 599 \n");
}

TEST(AccessLog, TargetIsQuotedAsUvicornQuotesIt) {
  // urllib.parse.quote(unquote(path)); the query as sent.
  EXPECT_EQ(access_log_target("/v1/chat/completions"), "/v1/chat/completions");
  EXPECT_EQ(access_log_target("/v1/models%0D%0AINFO:%20x"), "/v1/models%0D%0AINFO%3A%20x");
  EXPECT_EQ(access_log_target("/\x1b[31mred"), "/%1B%5B31mred");
  EXPECT_EQ(access_log_target("/caf\xc3\xa9"), "/caf%C3%A9");
  EXPECT_EQ(access_log_target("/%zz%4"), "/%25zz%254");
  EXPECT_EQ(access_log_target("/a%2Fb"), "/a/b");
  EXPECT_EQ(access_log_target("/%7e~"), "/~~");
  EXPECT_EQ(access_log_target("/a b\"c"), "/a%20b%22c");
  EXPECT_EQ(access_log_target("/metrics?name[]=a&x=%20y"), "/metrics?name[]=a&x=%20y");
  EXPECT_EQ(access_log_target("/q?a=\x01\x7f\xff"), "/q?a=%01%7F%FF");
  EXPECT_EQ(access_log_target("/health?"), "/health");
  EXPECT_EQ(access_log_target("/page#frag?x"), "/page");
  EXPECT_EQ(access_log_target(""), "");
}

TEST(AccessLog, NoByteOfTheRequestReachesTheLineRaw) {
  for (int b = 0; b < 256; ++b) {
    const std::string byte(1, static_cast<char>(b));
    const std::string line = access_log_line("1.2.3.4:5", "G" + byte, "/p" + byte + "?q" + byte, 11, 200);
    ASSERT_EQ(line.back(), '\n');
    for (size_t i = 0; i + 1 < line.size(); ++i) {
      const auto c = static_cast<unsigned char>(line[i]);
      ASSERT_TRUE(c >= 0x20 && c < 0x7f) << "byte " << b << " leaks into: " << line;
    }
  }
}

TEST(AccessLog, ExcludedPathsAndSwitch) {
  AccessLog log({.enabled = true, .excluded_paths = {"/health", "/metrics"}});
  EXPECT_FALSE(log.line("c:1", "GET", "/health", 11, 200));
  EXPECT_FALSE(log.line("c:1", "GET", "/health?probe=1", 11, 200));
  EXPECT_FALSE(log.line("c:1", "GET", "/metrics", 11, 200));
  EXPECT_TRUE(log.line("c:1", "GET", "/healthz", 11, 404));
  EXPECT_TRUE(log.line("c:1", "GET", "/v1/health", 11, 404));
  EXPECT_EQ(log.line("c:1", "POST", "/v1/completions", 11, 400).value(),
            "INFO:     c:1 - \"POST /v1/completions HTTP/1.1\" 400 Bad Request\n");
  AccessLog off({.enabled = false, .excluded_paths = {}});
  EXPECT_FALSE(off.enabled());
  EXPECT_FALSE(off.line("c:1", "GET", "/v1/models", 11, 200));
  EXPECT_TRUE(AccessLog({}).line("c:1", "GET", "/health", 11, 200));
}

TEST(AccessLog, EndpointListAndLevels) {
  EXPECT_EQ(parse_endpoint_list(" /health , /metrics,,/ping "),
            (std::vector<std::string>{"/health", "/metrics", "/ping"}));
  EXPECT_EQ(parse_endpoint_list("/health"), (std::vector<std::string>{"/health"}));
  EXPECT_TRUE(parse_endpoint_list("").empty());
  EXPECT_TRUE(parse_endpoint_list(" , ").empty());
  for (const char* shown : {"trace", "debug", "info"}) EXPECT_EQ(access_log_shown_at(shown), true) << shown;
  for (const char* hidden : {"warning", "error", "critical"}) EXPECT_EQ(access_log_shown_at(hidden), false) << hidden;
  EXPECT_EQ(access_log_shown_at("INFO"), std::nullopt);
  EXPECT_EQ(access_log_shown_at("verbose"), std::nullopt);
}

TEST(AccessLog, RefusedRequestKeepsItsRequestLine) {
  HttpReaderOptions options;
  options.max_body_bytes = 16;
  HttpRequestReader reader(options);
  const std::string big =
      "POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 99\r\n\r\n";
  const auto buffer = reader.prepare(big.size());
  std::memcpy(buffer.data(), big.data(), big.size());
  reader.commit(big.size());
  ASSERT_EQ(reader.parse(), HttpRequestReader::Event::error);
  ASSERT_TRUE(reader.refused_request_line());
  EXPECT_EQ(reader.refused_request_line()->method, "POST");
  EXPECT_EQ(reader.refused_request_line()->target, "/v1/completions");
  EXPECT_EQ(reader.refused_request_line()->version, 10u);

  // A request line that does not parse has none to log.
  HttpRequestReader bad(options);
  const std::string garbage = "GET /\x1b[2J HTTP/1.1\r\nHost: a\r\n\r\n";
  const auto room = bad.prepare(garbage.size());
  std::memcpy(room.data(), garbage.data(), garbage.size());
  bad.commit(garbage.size());
  ASSERT_EQ(bad.parse(), HttpRequestReader::Event::error);
  EXPECT_FALSE(bad.refused_request_line());
}

}  // namespace
}  // namespace tessera::server
