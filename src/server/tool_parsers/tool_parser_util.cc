#include "server/tool_parsers/tool_parser_util.h"

#include <algorithm>
#include <random>

namespace tessera::server {

size_t partial_marker_len(std::string_view text, std::string_view marker) {
  if (marker.empty()) return 0;
  for (size_t k = std::min(text.size(), marker.size() - 1); k > 0; --k) {
    if (text.substr(text.size() - k) == marker.substr(0, k)) return k;
  }
  return 0;
}

size_t partial_marker_len(std::string_view text, std::initializer_list<std::string_view> markers) {
  size_t longest = 0;
  for (std::string_view m : markers) longest = std::max(longest, partial_marker_len(text, m));
  return longest;
}

MarkerMatch match_marker(std::string_view text, std::string_view marker) {
  if (text.starts_with(marker)) return MarkerMatch::kFull;
  return marker.starts_with(text) ? MarkerMatch::kPartial : MarkerMatch::kNo;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
    return;
  }
  const int n = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  out += static_cast<char>(((0xF00 >> n) & 0xFF) | (cp >> (6 * (n - 1))));
  for (int k = n - 2; k >= 0; --k) out += static_cast<char>(0x80 | ((cp >> (6 * k)) & 0x3F));
}

Utf8 decode_utf8(std::string_view s, size_t i, bool allow_surrogates, uint32_t& cp, size_t& len) {
  const auto c = static_cast<unsigned char>(s[i]);
  const size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0) return Utf8::kBad;
  cp = c & (0x7F >> (n == 1 ? 0 : n));
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) return Utf8::kShort;
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return Utf8::kBad;
    cp = (cp << 6) | (cc & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
  if (cp < kMin[n] || cp > 0x10FFFF || (surrogate && !allow_surrogates)) return Utf8::kBad;
  len = n;
  return Utf8::kOk;
}

std::string random_tool_id(std::string_view alphabet, size_t n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::string id;
  for (size_t i = 0; i < n; ++i) id += alphabet[pick(rng)];
  return id;
}

std::string random_call_id() { return "chatcmpl-tool-" + random_tool_id("0123456789abcdef", 32); }

std::vector<ToolCall> join_calls(const std::vector<ToolCallDelta>& deltas) {
  std::vector<ToolCall> calls;
  for (const ToolCallDelta& d : deltas) {
    if (d.id) calls.push_back(ToolCall{*d.id, d.name.value_or(""), ""});
    if (!calls.empty()) calls.back().arguments += d.arguments;
  }
  return calls;
}

}  // namespace tessera::server
