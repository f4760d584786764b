// The Hub's HTTP: one GET over http or https (Boost.Beast, OpenSSL), following redirects,
// its body streamed to a sink. Every step has a deadline, so a dead network ends in an error,
// never a hang.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"

namespace tessera::hub {

struct HttpReply {
  int status = 0;
  std::string etag;           // X-Linked-Etag of any hop, else ETag (quotes and W/ dropped)
  std::string error_code;     // X-Error-Code (the Hub's: RepoNotFound, RevisionNotFound, GatedRepo, ...)
  std::string error_message;  // X-Error-Message
  std::string body;           // a 2xx body when no sink takes it, else the start of an error's
};

struct BodySink {
  std::function<void(uint64_t content_length)> on_start;  // the 2xx reply's length (0: unknown)
  std::function<Status(const char* data, size_t size)> on_data;
};

// GET url. `token` (when not empty) goes as "Authorization: Bearer" to the URL's host only,
// never to a redirect's other host (the Hub's file CDN). A 2xx body goes to `sink` (or into
// reply.body, up to max_body bytes, without one); other statuses come back as they are.
// Errors: no connection, TLS, a malformed URL or reply, a timeout, too many redirects.
Result<HttpReply> http_get(const std::string& url, const std::string& token, const BodySink* sink,
                           size_t max_body = size_t{64} << 20);

// Percent-encoding of a URL path segment (keep '/' when keep_slash).
std::string url_encode(const std::string& s, bool keep_slash);

}  // namespace tessera::hub
