// The access log of `tessera serve` in uvicorn's format (vLLM's server runs on uvicorn): one
// line per answered request, written when the response starts (a stream's line comes before
// its first event), as uvicorn writes it:
//
//   INFO:     127.0.0.1:54321 - "POST /v1/completions HTTP/1.1" 200 OK
//   INFO:      - "GET /health HTTP/1.1" 200 OK          (a Unix-socket client has no address)
//
// The request target is logged as uvicorn logs it (the path percent-decoded and quoted again,
// the query as sent), so no byte a client sends reaches the log raw: every control character
// and every byte outside printable ASCII is %XX. Pure functions here; HttpServer writes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::server {

struct AccessLogOptions {
  bool enabled = true;                      // vLLM's default; --disable-uvicorn-access-log
  std::vector<std::string> excluded_paths;  // --disable-access-log-for-endpoints: exact paths, no query
};

// Python's http.HTTPStatus phrase of a status ("OK", "Bad Request"); "" for one it does not
// know, which uvicorn prints as "599 ".
std::string_view status_phrase(int status);

// The target as uvicorn's get_path_with_query_string() gives it: the path (before "?" and any
// "#") percent-decoded, then quoted as urllib.parse.quote(path) does (letters, digits, "_.-~/"
// stay, every other byte is %XX, upper-case hex); then "?" and the query as sent, with bytes
// outside printable ASCII as %XX. Decoding is byte-wise: invalid UTF-8 stays as its bytes
// (Python would log U+FFFD's).
std::string access_log_target(std::string_view target);

// One line, "\n" included. `client` is "HOST:PORT" or "" (a Unix socket); `version` is
// Beast's (11: HTTP/1.1). The method is escaped like the query (Beast only passes tokens).
std::string access_log_line(std::string_view client, std::string_view method, std::string_view target,
                            unsigned version, int status);

// vLLM's --disable-access-log-for-endpoints value: comma-separated paths, blanks around them
// trimmed, empty entries dropped ("/health, /metrics" -> {"/health", "/metrics"}).
std::vector<std::string> parse_endpoint_list(std::string_view csv);

// uvicorn's --log-level names (trace, debug, info, warning, error, critical): whether the
// access log, written at info, shows at that level; nullopt for another name.
std::optional<bool> access_log_shown_at(std::string_view level);

class AccessLog {
 public:
  explicit AccessLog(AccessLogOptions options) : options_(std::move(options)) {}

  bool enabled() const { return options_.enabled; }
  // The line of one answered request, or nullopt when the log is off or the path excluded.
  std::optional<std::string> line(std::string_view client, std::string_view method, std::string_view target,
                                  unsigned version, int status) const;
  // Writes line() to stderr in one write (lines of several threads never interleave).
  void write(std::string_view client, std::string_view method, std::string_view target, unsigned version,
             int status) const;

 private:
  AccessLogOptions options_;
};

}  // namespace tessera::server
