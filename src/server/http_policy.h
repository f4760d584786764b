// What the HTTP transport accepts in a request head before it reads the body: framing that
// has one meaning (RFC 9112), a Host, an allowed Origin, a JSON body. Pure functions over a
// parsed head, so the request reader, the fuzzer and the tests drive the same code.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>

namespace tessera::server {

namespace beast = boost::beast;
namespace http = beast::http;

// Why a request is refused: the status and a message for the JSON error body.
struct HttpRefusal {
  http::status status;
  std::string message;
};

// What the parser saw of the head's fields (counts of the fields that must appear once).
struct HttpHeadFacts {
  int host_fields = 0;
  int content_length_fields = 0;
  int transfer_encoding_fields = 0;
  int origin_fields = 0;
  int content_type_fields = 0;
  bool obs_fold = false;  // a header line began with SP or HTAB (RFC 9112 5.2)
};

// Framing and Host (RFC 9112 3.2, 6.1-6.3): 400 for a message whose length or target is
// ambiguous. Only "Transfer-Encoding: chunked" is understood; anything else would leave the
// body's end to guesswork, and a guess that differs from a proxy's is request smuggling.
std::optional<HttpRefusal> check_framing(const http::request_header<>& head, const HttpHeadFacts& facts);

// Browsers attach Origin to cross-site requests (and to every POST). A request whose Origin
// is present and not allowed gets 403: without an API key, any web page the user opens could
// otherwise drive the API. Allowed: an entry of `allowed_origins` (exact, case-insensitive;
// "*" allows all), or an Origin naming the request's own Host when that Host is an IP
// literal or localhost. A Host that is a DNS name is not trusted for this: a DNS rebinding
// page has an Origin that matches its Host by construction.
bool origin_allowed(std::string_view origin, std::string_view host, const std::vector<std::string>& allowed_origins);

// True for "application/json" with optional parameters ("; charset=utf-8"), any case.
bool is_json_media_type(std::string_view content_type);

// Origin (403) and Content-Type (415) of a request whose head is complete; `has_body`: a
// Content-Length above 0 or a chunked body. Every route takes JSON; a form or text/plain body
// is what a cross-site <form> or no-cors fetch can send without a CORS preflight.
std::optional<HttpRefusal> check_origin_and_content_type(const http::request_header<>& head, const HttpHeadFacts& facts,
                                                         bool has_body,
                                                         const std::vector<std::string>& allowed_origins);

}  // namespace tessera::server
