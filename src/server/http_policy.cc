#include "server/http_policy.h"

#include <algorithm>

#include <boost/asio/ip/address.hpp>

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

// Names that DNS cannot point elsewhere: an IP literal or localhost (browsers resolve
// localhost to loopback themselves).
bool is_fixed_host(std::string_view authority) {
  std::string_view name;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return false;
    name = authority.substr(1, close - 1);
  } else {
    name = authority.substr(0, authority.find(':'));
  }
  if (iequals(name, "localhost")) return true;
  boost::system::error_code ec;
  boost::asio::ip::make_address(std::string(name), ec);
  return !ec;
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

bool origin_allowed(std::string_view origin, std::string_view host, const std::vector<std::string>& allowed_origins) {
  origin = trim(origin);
  for (const std::string& entry : allowed_origins) {
    std::string_view e = trim(entry);
    if (e == "*") return true;
    if (!e.empty() && e.back() == '/') e.remove_suffix(1);
    if (!e.empty() && iequals(e, origin)) return true;
  }
  const size_t sep = origin.find("://");
  if (sep == std::string_view::npos) return false;  // "null" (sandboxed pages, file://) among others
  const std::string_view scheme = origin.substr(0, sep);
  if (!iequals(scheme, "http") && !iequals(scheme, "https")) return false;
  const std::string_view authority = origin.substr(sep + 3);
  return !authority.empty() && iequals(authority, trim(host)) && is_fixed_host(authority);
}

bool is_json_media_type(std::string_view content_type) {
  return iequals(trim(content_type.substr(0, content_type.find(';'))), "application/json");
}

std::optional<HttpRefusal> check_origin_and_content_type(const http::request_header<>& head, const HttpHeadFacts& facts,
                                                         bool has_body,
                                                         const std::vector<std::string>& allowed_origins) {
  if (facts.origin_fields > 1) return HttpRefusal{http::status::forbidden, "more than one Origin"};
  if (facts.origin_fields == 1) {
    const std::string_view origin = sv(head[http::field::origin]);
    if (!origin_allowed(origin, sv(head[http::field::host]), allowed_origins)) {
      return HttpRefusal{http::status::forbidden,
                         "requests from the web origin " + quote(trim(origin)) +
                             " are not allowed (the server's --allowed-origins)"};
    }
  }
  if (has_body) {
    const std::string_view type = sv(head[http::field::content_type]);
    if (facts.content_type_fields != 1 || !is_json_media_type(type)) {
      return HttpRefusal{http::status::unsupported_media_type,
                         facts.content_type_fields == 0
                             ? std::string("a request body needs Content-Type: application/json")
                             : "request bodies must be application/json, not " + quote(type)};
    }
  }
  return std::nullopt;
}

}  // namespace tessera::server
