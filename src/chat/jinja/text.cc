#include "chat/jinja/text.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <cstdlib>

namespace tessera::jinja {
namespace {

// Invalid bytes decode to lone surrogates U+DC80..U+DCFF (Python's "surrogateescape"),
// which append_utf8 turns back into the original byte.
constexpr char32_t kEscapeBase = 0xDC00;

bool in(char32_t c, char32_t lo, char32_t hi) { return c >= lo && c <= hi; }

// Ranges where upper and lower case alternate: even code point upper, odd lower (or the
// reverse when `odd_upper`).
struct PairRange {
  char32_t lo, hi;
  bool odd_upper;
};
constexpr PairRange kPairRanges[] = {
    {0x100, 0x12F, false}, {0x132, 0x137, false}, {0x139, 0x148, true},  {0x14A, 0x177, false},
    {0x179, 0x17E, true},  {0x182, 0x185, false}, {0x1A0, 0x1A5, false}, {0x1CD, 0x1DC, true},
    {0x1DE, 0x1EF, false}, {0x1F8, 0x21F, false}, {0x222, 0x233, false}, {0x3D8, 0x3EF, false},
    {0x460, 0x481, false}, {0x48A, 0x4BF, false}, {0x4C1, 0x4CE, true},  {0x4D0, 0x52F, false},
    {0x1E00, 0x1E95, false}, {0x1EA0, 0x1EFF, false},
};

// Offset ranges: [lo, hi] upper case maps to lower by +delta.
struct ShiftRange {
  char32_t lo, hi;
  int32_t delta;
};
constexpr ShiftRange kShiftRanges[] = {
    {'A', 'Z', 32},        {0xC0, 0xD6, 32},      {0xD8, 0xDE, 32},     {0x391, 0x3A1, 32},
    {0x3A3, 0x3AB, 32},    {0x388, 0x38A, 37},    {0x410, 0x42F, 32},   {0x400, 0x40F, 80},
    {0x531, 0x556, 48},    {0xFF21, 0xFF3A, 32},  {0x10A0, 0x10C5, 7264},
};

// Latin digraphs come in threes (upper, title, lower): DŽ Dž dž, LJ Lj lj, NJ Nj nj, DZ Dz dz.
char32_t digraph_case(char32_t c, int which) {
  for (char32_t base : {0x1C4u, 0x1C7u, 0x1CAu, 0x1F1u}) {
    if (c >= base && c < base + 3) return base + which;
  }
  return 0;
}

char32_t simple_lower(char32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
  if (char32_t d = digraph_case(c, 2)) return d;
  for (const ShiftRange& r : kShiftRanges) {
    if (in(c, r.lo, r.hi)) return c + r.delta;
  }
  for (const PairRange& r : kPairRanges) {
    if (in(c, r.lo, r.hi)) return ((c & 1) == (r.odd_upper ? 1u : 0u)) ? c + 1 : c;
  }
  switch (c) {
    case 0x178: return 0xFF;
    case 0x386: return 0x3AC;
    case 0x38C: return 0x3CC;
    case 0x38E: return 0x3CD;
    case 0x38F: return 0x3CE;
    default: return c;
  }
}

char32_t simple_upper(char32_t c) {
  if (c < 0x80) return c >= 'a' && c <= 'z' ? c - 32 : c;
  if (char32_t d = digraph_case(c, 0)) return d;
  for (const ShiftRange& r : kShiftRanges) {
    if (in(c, r.lo + r.delta, r.hi + r.delta) && c != 0x3C2) return c - r.delta;
  }
  for (const PairRange& r : kPairRanges) {
    if (in(c, r.lo, r.hi)) return ((c & 1) == (r.odd_upper ? 1u : 0u)) ? c : c - 1;
  }
  switch (c) {
    case 0xFF: return 0x178;
    case 0xB5: return 0x39C;
    case 0x131: return 'I';
    case 0x17F: return 'S';
    case 0x3C2: return 0x3A3;
    case 0x3AC: return 0x386;
    case 0x3CC: return 0x38C;
    case 0x3CD: return 0x38E;
    case 0x3CE: return 0x38F;
    default: return c;
  }
}

void append_upper(std::string& out, char32_t c) {
  if (c == 0xDF) {
    out += "SS";  // German sharp s has no single-character upper case
    return;
  }
  append_utf8(out, simple_upper(c));
}

bool is_cased(char32_t c) { return simple_lower(c) != c || simple_upper(c) != c || c == 0xDF; }

}  // namespace

size_t utf8_next(std::string_view s, size_t i, char32_t* cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    *cp = b0;
    return i + 1;
  }
  int len = 0;
  char32_t c = 0;
  char32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, c = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, c = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, c = b0 & 0x07, min = 0x10000;
  } else {
    *cp = kEscapeBase + b0;
    return i + 1;
  }
  if (i + len > s.size()) {
    *cp = kEscapeBase + b0;
    return i + 1;
  }
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      *cp = kEscapeBase + b0;
      return i + 1;
    }
    c = (c << 6) | (b & 0x3F);
  }
  if (c < min || c > 0x10FFFF || in(c, 0xD800, 0xDFFF)) {
    *cp = kEscapeBase + b0;
    return i + 1;
  }
  *cp = c;
  return i + len;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (in(c, kEscapeBase + 0x80, kEscapeBase + 0xFF)) {
    out += static_cast<char>(c - kEscapeBase);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

size_t count_code_points(std::string_view s) {
  size_t n = 0;
  char32_t c;
  for (size_t i = 0; i < s.size(); ++n) i = utf8_next(s, i, &c);
  return n;
}

std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> offs;
  offs.reserve(s.size() + 1);
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    offs.push_back(i);
    i = utf8_next(s, i, &c);
  }
  offs.push_back(s.size());
  return offs;
}

std::vector<char32_t> decode_utf8(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    i = utf8_next(s, i, &c);
    out.push_back(c);
  }
  return out;
}

bool is_py_space(char32_t c) {
  return c == ' ' || in(c, 0x09, 0x0D) || in(c, 0x1C, 0x1F) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || in(c, 0x2000, 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

bool is_py_linebreak(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || in(c, 0x1C, 0x1E) || c == 0x85 ||
         c == 0x2028 || c == 0x2029;
}

bool is_py_digit(char32_t c) { return in(c, '0', '9') || in(c, 0x660, 0x669) || in(c, 0xFF10, 0xFF19); }

bool is_py_alpha(char32_t c) {
  if (c < 0x80) return in(c | 0x20, 'a', 'z');
  if (c < 0x100) return c == 0xAA || c == 0xB5 || c == 0xBA || (c >= 0xC0 && c != 0xD7 && c != 0xF7);
  return in(c, 0x100, 0x2AF) || in(c, 0x370, 0x373) || in(c, 0x376, 0x3FF) ||
         in(c, 0x400, 0x481) || in(c, 0x48A, 0x52F) || in(c, 0x531, 0x587) ||
         in(c, 0x5D0, 0x5EA) || in(c, 0x620, 0x64A) || in(c, 0x904, 0x939) ||
         in(c, 0xE01, 0xE30) || in(c, 0x10A0, 0x10FF) || in(c, 0x1E00, 0x1FFF) ||
         in(c, 0x3041, 0x3096) || in(c, 0x30A1, 0x30FA) || in(c, 0x3400, 0x4DBF) ||
         in(c, 0x4E00, 0x9FFF) || in(c, 0xAC00, 0xD7A3) || in(c, 0xFF21, 0xFF3A) ||
         in(c, 0xFF41, 0xFF5A) || in(c, 0x20000, 0x2FA1F);
}

bool is_py_word(char32_t c) {
  return c == '_' || is_py_alpha(c) || is_py_digit(c) || in(c, 0x300, 0x36F) ||
         in(c, 0x30FC, 0x30FC) || in(c, 0x3005, 0x3007);
}

bool is_py_upper(char32_t c) { return simple_lower(c) != c; }
bool is_py_lower(char32_t c) { return simple_upper(c) != c || c == 0xDF; }

bool is_py_printable(char32_t c) {
  if (c < 0x20 || in(c, 0x7F, 0xA0) || c == 0xAD) return false;
  if (c == 0x1680 || in(c, 0x2000, 0x200F) || in(c, 0x2028, 0x202F) || in(c, 0x205F, 0x206F))
    return false;
  if (c == 0x3000 || c == 0xFEFF || in(c, 0xD800, 0xDFFF) || in(c, 0xE000, 0xF8FF)) return false;
  if (in(c, 0xFFF9, 0xFFFB) || c == 0xFFFE || c == 0xFFFF || in(c, 0x600, 0x605) || c == 0x61C)
    return false;
  if (c == 0x6DD || c == 0x70F || c == 0x180E || in(c, 0xE0000, 0xE0FFF) || c >= 0xF0000)
    return false;
  return true;
}

std::string py_upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    i = utf8_next(s, i, &c);
    append_upper(out, c);
  }
  return out;
}

std::string py_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    i = utf8_next(s, i, &c);
    append_utf8(out, simple_lower(c));
  }
  return out;
}

std::string py_title(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool prev_cased = false;
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    i = utf8_next(s, i, &c);
    if (prev_cased) {
      append_utf8(out, simple_lower(c));
    } else {
      append_upper(out, c);
    }
    prev_cased = is_cased(c);
  }
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char32_t c;
  bool first = true;
  for (size_t i = 0; i < s.size(); first = false) {
    i = utf8_next(s, i, &c);
    if (first) {
      append_upper(out, c);
    } else {
      append_utf8(out, simple_lower(c));
    }
  }
  return out;
}

std::string py_swapcase(std::string_view s) {
  std::string out;
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    i = utf8_next(s, i, &c);
    if (is_py_upper(c)) {
      append_utf8(out, simple_lower(c));
    } else {
      append_upper(out, c);
    }
  }
  return out;
}

std::string_view py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                          bool right) {
  std::vector<char32_t> set;
  if (chars) set = decode_utf8(*chars);
  auto strip_it = [&](char32_t c) {
    if (!chars) return is_py_space(c);
    for (char32_t x : set) {
      if (x == c) return true;
    }
    return false;
  };
  std::vector<size_t> offs = code_point_offsets(s);
  size_t b = 0;
  size_t e = offs.size() - 1;
  char32_t c;
  if (left) {
    while (b < e && (utf8_next(s, offs[b], &c), strip_it(c))) ++b;
  }
  if (right) {
    while (e > b && (utf8_next(s, offs[e - 1], &c), strip_it(c))) --e;
  }
  return s.substr(offs[b], offs[e] - offs[b]);
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (sep) {
    if (sep->empty()) return parts;
    if (!from_right) {
      size_t pos = 0;
      while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        size_t hit = s.find(*sep, pos);
        if (hit == std::string_view::npos) break;
        parts.emplace_back(s.substr(pos, hit - pos));
        pos = hit + sep->size();
      }
      parts.emplace_back(s.substr(pos));
    } else {
      size_t end = s.size();
      while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        if (end < sep->size()) break;
        size_t hit = s.rfind(*sep, end - sep->size());
        if (hit == std::string_view::npos) break;
        parts.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
        end = hit;
      }
      parts.emplace_back(s.substr(0, end));
      std::reverse(parts.begin(), parts.end());
    }
    return parts;
  }
  // Whitespace split: runs of whitespace separate, ends never yield empty parts.
  std::vector<size_t> offs = code_point_offsets(s);
  const size_t n = offs.size() - 1;
  auto space_at = [&](size_t k) {
    char32_t c;
    utf8_next(s, offs[k], &c);
    return is_py_space(c);
  };
  if (!from_right) {
    size_t k = 0;
    while (true) {
      while (k < n && space_at(k)) ++k;
      if (k == n) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        parts.emplace_back(s.substr(offs[k]));  // the remainder keeps its trailing space
        break;
      }
      size_t b = k;
      while (k < n && !space_at(k)) ++k;
      parts.emplace_back(s.substr(offs[b], offs[k] - offs[b]));
    }
  } else {
    size_t k = n;
    while (true) {
      while (k > 0 && space_at(k - 1)) --k;
      if (k == 0) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        parts.emplace_back(s.substr(0, offs[k]));  // the remainder keeps its leading space
        break;
      }
      size_t e = k;
      while (k > 0 && !space_at(k - 1)) --k;
      parts.emplace_back(s.substr(offs[k], offs[e] - offs[k]));
    }
    std::reverse(parts.begin(), parts.end());
  }
  return parts;
}

std::vector<std::string> py_splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> lines;
  size_t start = 0;
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    size_t next = utf8_next(s, i, &c);
    if (!is_py_linebreak(c)) {
      i = next;
      continue;
    }
    if (c == '\r' && next < s.size() && s[next] == '\n') ++next;
    lines.emplace_back(s.substr(start, (keepends ? next : i) - start));
    start = i = next;
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return lines;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view repl,
                       int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts `repl` before every code point and at the end, `count` times at most.
    std::vector<size_t> offs = code_point_offsets(s);
    const size_t n = offs.size() - 1;
    int64_t done = 0;
    for (size_t k = 0; k <= n; ++k) {
      if (count < 0 || done < count) {
        out += repl;
        ++done;
      }
      if (k < n) out += s.substr(offs[k], offs[k + 1] - offs[k]);
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    out += s.substr(pos, hit - pos);
    out += repl;
    pos = hit + old.size();
    ++done;
  }
  out += s.substr(pos);
  return out;
}

int64_t py_find(std::string_view s, std::string_view sub, bool from_right) {
  size_t hit = from_right ? s.rfind(sub) : s.find(sub);
  if (hit == std::string_view::npos) return -1;
  return static_cast<int64_t>(count_code_points(s.substr(0, hit)));
}

int64_t py_count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(count_code_points(s)) + 1;
  int64_t n = 0;
  for (size_t pos = s.find(sub); pos != std::string_view::npos; pos = s.find(sub, pos + sub.size())) {
    ++n;
  }
  return n;
}

std::string py_center(std::string_view s, int64_t width, std::string_view fill) {
  const int64_t len = static_cast<int64_t>(count_code_points(s));
  if (width <= len) return std::string(s);
  const int64_t pad = width - len;
  const int64_t left = pad / 2 + (pad & width & 1);  // CPython's rounding
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < pad - left; ++i) out += fill;
  return out;
}

std::string py_repr_string(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    i = utf8_next(s, i, &c);
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (is_py_printable(c)) {
      append_utf8(out, c);
    } else {
      char buf[16];
      if (c < 0x100) {
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      } else if (c < 0x10000) {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      } else {
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      }
      out += buf;
    }
  }
  out += quote;
  return out;
}

std::string py_repr_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view sci(buf, res.ptr - buf);
  // sci = [-]d[.ddd]e[+-]XX: split into sign, digits and the decimal exponent.
  std::string out;
  size_t p = 0;
  if (sci[0] == '-') {
    out += '-';
    p = 1;
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (size_t i = p; i < e_pos; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  const int exp = std::atoi(std::string(sci.substr(e_pos + 1)).c_str());
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0.";
      out.append(static_cast<size_t>(-exp - 1), '0');
      out += digits;
    } else {
      const size_t int_len = static_cast<size_t>(exp) + 1;
      if (digits.size() <= int_len) {
        out += digits;
        out.append(int_len - digits.size(), '0');
        out += ".0";
      } else {
        out += digits.substr(0, int_len);
        out += '.';
        out += digits.substr(int_len);
      }
    }
    return out;
  }
  out += digits[0];
  if (digits.size() > 1) {
    out += '.';
    out += digits.substr(1);
  }
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  out += ebuf;
  return out;
}

}  // namespace tessera::jinja
