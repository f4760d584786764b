#include "server/access_log.h"

#include <cstdio>
#include <utility>

namespace tessera::server {

namespace {

struct Phrase {
  int status;
  std::string_view text;
};

// Python 3.11/3.12's http.HTTPStatus, what uvicorn prints.
constexpr Phrase kPhrases[] = {
    {100, "Continue"}, {101, "Switching Protocols"}, {102, "Processing"}, {103, "Early Hints"}, {200, "OK"},
    {201, "Created"}, {202, "Accepted"}, {203, "Non-Authoritative Information"}, {204, "No Content"},
    {205, "Reset Content"}, {206, "Partial Content"}, {207, "Multi-Status"}, {208, "Already Reported"},
    {226, "IM Used"}, {300, "Multiple Choices"}, {301, "Moved Permanently"}, {302, "Found"},
    {303, "See Other"}, {304, "Not Modified"}, {305, "Use Proxy"}, {307, "Temporary Redirect"},
    {308, "Permanent Redirect"}, {400, "Bad Request"}, {401, "Unauthorized"}, {402, "Payment Required"},
    {403, "Forbidden"}, {404, "Not Found"}, {405, "Method Not Allowed"}, {406, "Not Acceptable"},
    {407, "Proxy Authentication Required"}, {408, "Request Timeout"}, {409, "Conflict"}, {410, "Gone"},
    {411, "Length Required"}, {412, "Precondition Failed"}, {413, "Request Entity Too Large"},
    {414, "Request-URI Too Long"}, {415, "Unsupported Media Type"}, {416, "Requested Range Not Satisfiable"},
    {417, "Expectation Failed"}, {418, "I'm a Teapot"}, {421, "Misdirected Request"},
    {422, "Unprocessable Entity"}, {423, "Locked"}, {424, "Failed Dependency"}, {425, "Too Early"},
    {426, "Upgrade Required"}, {428, "Precondition Required"}, {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"}, {451, "Unavailable For Legal Reasons"},
    {500, "Internal Server Error"}, {501, "Not Implemented"}, {502, "Bad Gateway"},
    {503, "Service Unavailable"}, {504, "Gateway Timeout"}, {505, "HTTP Version Not Supported"},
    {506, "Variant Also Negotiates"}, {507, "Insufficient Storage"}, {508, "Loop Detected"},
    {510, "Not Extended"}, {511, "Network Authentication Required"},
};

constexpr char kHex[] = "0123456789ABCDEF";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_escaped(std::string& out, unsigned char c) {
  out += '%';
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

// urllib.parse.quote(s, safe="/"): RFC 3986's unreserved characters and "/" stay.
void append_quoted(std::string& out, unsigned char c) {
  const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '-' || c == '~' || c == '/';
  if (safe) {
    out += static_cast<char>(c);
  } else {
    append_escaped(out, c);
  }
}

// Printable ASCII stays (what uvicorn prints of a query); anything else is %XX.
void append_printable(std::string& out, std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c > 0x20 && c < 0x7f) {
      out += ch;
    } else {
      append_escaped(out, c);
    }
  }
}

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// The line around a target already made safe by access_log_target().
std::string format_line(std::string_view client, std::string_view method, std::string_view logged_target,
                        unsigned version, int status) {
  const std::string_view phrase = status_phrase(status);
  std::string line;
  line.reserve(48 + client.size() + method.size() + logged_target.size() + phrase.size());
  line += "INFO:     ";  // uvicorn's "%(levelprefix)s ": "INFO:" padded to 9, then a space
  line += client;
  line += " - \"";
  append_printable(line, method);
  line += ' ';
  line += logged_target;
  line += " HTTP/";
  line += static_cast<char>('0' + version / 10 % 10);
  line += '.';
  line += static_cast<char>('0' + version % 10);
  line += "\" ";
  line += std::to_string(status);
  line += ' ';
  line += phrase;
  line += '\n';
  return line;
}

}  // namespace

std::string_view status_phrase(int status) {
  for (const Phrase& p : kPhrases) {
    if (p.status == status) return p.text;
  }
  return {};
}

std::string access_log_target(std::string_view target) {
  if (const size_t hash = target.find('#'); hash != std::string_view::npos) target = target.substr(0, hash);
  const size_t question = target.find('?');
  const std::string_view path = target.substr(0, question);
  std::string out;
  out.reserve(target.size() + 16);
  for (size_t i = 0; i < path.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(path[i]);
    if (c == '%' && i + 2 < path.size() && hex_value(path[i + 1]) >= 0 && hex_value(path[i + 2]) >= 0) {
      c = static_cast<unsigned char>(hex_value(path[i + 1]) * 16 + hex_value(path[i + 2]));
      i += 2;
    }
    append_quoted(out, c);
  }
  if (question != std::string_view::npos && question + 1 < target.size()) {
    out += '?';
    append_printable(out, target.substr(question + 1));
  }
  return out;
}

std::string access_log_line(std::string_view client, std::string_view method, std::string_view target,
                            unsigned version, int status) {
  return format_line(client, method, access_log_target(target), version, status);
}

std::vector<std::string> parse_endpoint_list(std::string_view csv) {
  std::vector<std::string> paths;
  while (!csv.empty()) {
    const size_t comma = csv.find(',');
    const std::string_view item = trim(csv.substr(0, comma));
    if (!item.empty()) paths.emplace_back(item);
    if (comma == std::string_view::npos) break;
    csv.remove_prefix(comma + 1);
  }
  return paths;
}

std::optional<bool> access_log_shown_at(std::string_view level) {
  if (level == "trace" || level == "debug" || level == "info") return true;
  if (level == "warning" || level == "error" || level == "critical") return false;
  return std::nullopt;
}

std::optional<std::string> AccessLog::line(std::string_view client, std::string_view method, std::string_view target,
                                           unsigned version, int status) const {
  if (!options_.enabled) return std::nullopt;
  const std::string logged_target = access_log_target(target);
  // vLLM's filter: the logged path without its query, matched exactly.
  const std::string_view path = std::string_view(logged_target).substr(0, logged_target.find('?'));
  for (const std::string& excluded : options_.excluded_paths) {
    if (path == excluded) return std::nullopt;
  }
  return format_line(client, method, logged_target, version, status);
}

void AccessLog::write(std::string_view client, std::string_view method, std::string_view target, unsigned version,
                      int status) const {
  const auto text = line(client, method, target, version, status);
  if (!text) return;
  std::fwrite(text->data(), 1, text->size(), stderr);
}

}  // namespace tessera::server
