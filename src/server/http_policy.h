// What the HTTP transport accepts in a request head before it reads the body: framing that
// has one meaning (RFC 9112) and a Host. Pure functions over a parsed head, so the request
// reader, the fuzzer and the tests drive the same code.
#pragma once

#include <optional>
#include <string>
#include <string_view>

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

}  // namespace tessera::server
