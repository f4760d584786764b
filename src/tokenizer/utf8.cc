#include "tokenizer/utf8.h"

namespace tessera::tokenizer {

namespace {

// Length of the sequence a lead byte starts (0: not a valid lead byte) and the allowed
// range of its second byte (Unicode Table 3-7), which rules out overlongs, surrogates and
// code points past U+10FFFF.
size_t lead_len(uint8_t c, uint8_t* lo, uint8_t* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) {
    if (c == 0xE0) *lo = 0xA0;
    if (c == 0xED) *hi = 0x9F;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (c == 0xF0) *lo = 0x90;
    if (c == 0xF4) *hi = 0x8F;
    return 4;
  }
  return 0;
}

// How many bytes at pos (lead included, at most len) fit a valid sequence of that lead.
size_t matched_prefix(std::string_view s, size_t pos, size_t len, uint8_t lo, uint8_t hi) {
  size_t i = 1;
  for (; i < len && pos + i < s.size(); ++i) {
    const auto x = static_cast<uint8_t>(s[pos + i]);
    if (x < (i == 1 ? lo : 0x80) || x > (i == 1 ? hi : 0xBF)) break;
  }
  return i;
}

}  // namespace

size_t utf8_valid_len(std::string_view s, size_t pos) {
  if (pos >= s.size()) return 0;
  uint8_t lo, hi;
  const size_t len = lead_len(static_cast<uint8_t>(s[pos]), &lo, &hi);
  if (len == 0) return 0;
  return matched_prefix(s, pos, len, lo, hi) == len ? len : 0;
}

bool is_valid_utf8(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    if (static_cast<uint8_t>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const size_t len = utf8_valid_len(s, pos);
    if (len == 0) return false;
    pos += len;
  }
  return true;
}

namespace {

// Length of the longest prefix at pos that could start a valid sequence (the "maximal
// subpart" a decoder replaces with one U+FFFD); at least 1.
size_t maximal_subpart(std::string_view s, size_t pos) {
  uint8_t lo, hi;
  const size_t len = lead_len(static_cast<uint8_t>(s[pos]), &lo, &hi);
  return len == 0 ? 1 : matched_prefix(s, pos, len, lo, hi);
}

}  // namespace

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    if (static_cast<uint8_t>(s[pos]) < 0x80) {
      out.push_back(s[pos++]);
      continue;
    }
    const size_t len = utf8_valid_len(s, pos);
    if (len > 0) {
      out.append(s.substr(pos, len));
      pos += len;
    } else {
      out.append(kReplacementChar);
      pos += maximal_subpart(s, pos);
    }
  }
  return out;
}

size_t utf8_incomplete_tail(std::string_view s) {
  // Look back at most 3 bytes for a lead byte whose sequence runs past the end.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t pos = n - back;
    const auto c = static_cast<uint8_t>(s[pos]);
    if (c < 0x80) return 0;
    if (c >= 0xC0) {
      const size_t need = utf8_lead_len(c);
      return need > back && maximal_subpart(s, pos) == back ? back : 0;
    }
  }
  return 0;
}

uint32_t utf8_next(std::string_view s, size_t& pos) {
  const auto c = static_cast<uint8_t>(s[pos]);
  const size_t len = utf8_lead_len(c);
  if (len == 1 || pos + len > s.size()) {
    ++pos;
    return c;
  }
  uint32_t cp = c & (0x7F >> len);
  for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<uint8_t>(s[pos + i]) & 0x3F);
  pos += len;
  return cp;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace tessera::tokenizer
