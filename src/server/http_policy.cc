#include "server/http_policy.h"

#include <algorithm>

namespace tessera::server {

namespace {

// beast::string_view is std::string_view here, its own type in newer Boost: convert once.
template <class View>
std::string_view sv(const View& v) {
  return std::string_view(v.data(), v.size());
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

// Quoted into a message: bounded, so a 60 KB field does not come back in the answer.
std::string quote(std::string_view s) {
  constexpr size_t kMax = 200;
  std::string out = "'";
  out.append(s.substr(0, kMax));
  out += s.size() > kMax ? "...'" : "'";
  return out;
}

// RFC 3986 host [":" port]: reg-name / IPv4 / "[" IPv6 "]" characters only.
bool valid_host(std::string_view host) {
  return std::all_of(host.begin(), host.end(), [](char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ||
           std::string_view("-._~!$&'()*+,;=:%[]").find(c) != std::string_view::npos;
  });
}

}  // namespace

std::optional<HttpRefusal> check_framing(const http::request_header<>& head, const HttpHeadFacts& facts) {
  auto bad = [](std::string message) { return HttpRefusal{http::status::bad_request, std::move(message)}; };
  if (facts.obs_fold) return bad("obsolete line folding (a header line that begins with a space or tab)");
  if (facts.transfer_encoding_fields > 0) {
    if (head.version() < 11) return bad("Transfer-Encoding in an HTTP/1.0 request");
    if (facts.content_length_fields > 0) return bad("both Transfer-Encoding and Content-Length");
    const std::string_view te = trim(sv(head[http::field::transfer_encoding]));
    if (facts.transfer_encoding_fields > 1 || !iequals(te, "chunked")) {
      return bad("unsupported Transfer-Encoding " + quote(te) + " (only chunked is accepted)");
    }
  }
  if (facts.content_length_fields > 1) return bad("more than one Content-Length");
  if (facts.content_length_fields == 1 && sv(head[http::field::content_length]).find(',') != std::string_view::npos) {
    return bad("a list of Content-Length values");
  }
  if (facts.host_fields > 1) return bad("more than one Host");
  if (facts.host_fields == 0 && head.version() >= 11) return bad("an HTTP/1.1 request without Host");
  if (facts.host_fields == 1 && !valid_host(sv(head[http::field::host]))) {
    return bad("invalid Host " + quote(sv(head[http::field::host])));
  }
  return std::nullopt;
}

}  // namespace tessera::server
