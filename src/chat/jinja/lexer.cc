#include "chat/jinja/lexer.h"

#include <cmath>
#include <cstdlib>

#include "chat/jinja/text.h"

namespace tessera::jinja {
namespace {

// Template sources past this size are refused before lexing.
constexpr size_t kMaxSourceBytes = 8u << 20;

std::string normalize_newlines(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out += src[i];
    }
  }
  // keep_trailing_newline=False: one final newline is dropped.
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  Lexer(std::string_view src, const LexOptions& o) : src_(normalize_newlines(src)), opt_(o) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) lex_root();
    push(Tok::kEof, "", pos_);
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail(const std::string& msg, size_t at) {
    auto [line, col] = location(at);
    throw Error(msg, line, col);
  }

  // Line and column of byte offset `at`; tokens arrive in order, so this only scans forward.
  std::pair<int, int> location(size_t at) {
    if (at < loc_pos_) loc_pos_ = 0, loc_line_ = 1, loc_line_start_ = 0;
    for (; loc_pos_ < at && loc_pos_ < src_.size(); ++loc_pos_) {
      if (src_[loc_pos_] == '\n') ++loc_line_, loc_line_start_ = loc_pos_ + 1;
    }
    return {loc_line_, static_cast<int>(at - loc_line_start_) + 1};
  }

  Token& push(Tok type, std::string text, size_t at) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    auto [line, col] = location(at);
    t.line = line;
    t.col = col;
    tokens_.push_back(std::move(t));
    return tokens_.back();
  }

  // Applies `-` / lstrip_blocks to the text before a tag and emits it.
  void emit_text(std::string_view text, size_t text_start, char sign, bool is_variable) {
    if (sign == '-') {
      text = py_strip(text, std::nullopt, false, true);
    } else if (sign != '+' && opt_.lstrip_blocks && !is_variable) {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
      if (l_pos > 0 || line_starting_) {
        bool only_blank = true;
        for (size_t i = l_pos; i < text.size(); ++i) {
          if (text[i] != ' ' && text[i] != '\t') only_blank = false;
        }
        if (only_blank) text = text.substr(0, l_pos);
      }
    }
    if (!text.empty()) push(Tok::kData, std::string(text), text_start);
  }

  // Skips whitespace after `-%}` and sets line_starting_ from the consumed text.
  size_t skip_space_after_end(size_t p) {
    char32_t c;
    while (p < src_.size()) {
      size_t next = utf8_next(src_, p, &c);
      if (!is_py_space(c)) break;
      p = next;
    }
    return p;
  }

  void lex_root() {
    const size_t start = pos_;
    size_t hit = start;
    while (true) {
      hit = src_.find('{', hit);
      if (hit == std::string::npos || hit + 1 >= src_.size()) {
        emit_text(std::string_view(src_).substr(start), start, 0, true);
        pos_ = src_.size();
        return;
      }
      const char k = src_[hit + 1];
      if (k == '{' || k == '%' || k == '#') break;
      ++hit;
    }
    const char kind = src_[hit + 1];
    size_t p = hit + 2;
    char sign = 0;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
    const std::string_view text = std::string_view(src_).substr(start, hit - start);
    if (kind == '%' && try_raw(text, start, hit, p, sign)) return;
    emit_text(text, start, sign, kind == '{');
    line_starting_ = false;
    if (kind == '#') {
      lex_comment(p);
    } else {
      push(kind == '{' ? Tok::kVarBegin : Tok::kBlockBegin, "", hit);
      pos_ = p;
      lex_tag(kind == '{');
    }
  }

  // `{% raw %}...{% endraw %}`: everything between is data.
  bool try_raw(std::string_view text, size_t start, size_t hit, size_t p, char sign) {
    size_t q = p;
    while (q < src_.size() && is_py_space(static_cast<unsigned char>(src_[q]))) ++q;
    if (src_.compare(q, 3, "raw") != 0) return false;
    q += 3;
    while (q < src_.size() && is_py_space(static_cast<unsigned char>(src_[q]))) ++q;
    if (src_.compare(q, 3, "-%}") == 0) {
      q = skip_space_after_end(q + 3);
    } else if (src_.compare(q, 2, "%}") == 0) {
      q += 2;
    } else {
      return false;
    }
    emit_text(text, start, sign, false);
    line_starting_ = src_[q - 1] == '\n';
    // Find `{%[-+]? endraw [-+]?%}`.
    for (size_t s = src_.find("{%", q); s != std::string::npos; s = src_.find("{%", s + 1)) {
      size_t r = s + 2;
      char esign = 0;
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) esign = src_[r++];
      while (r < src_.size() && is_py_space(static_cast<unsigned char>(src_[r]))) ++r;
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      while (r < src_.size() && is_py_space(static_cast<unsigned char>(src_[r]))) ++r;
      size_t end;
      if (src_.compare(r, 3, "+%}") == 0) {
        end = r + 3;
      } else if (src_.compare(r, 3, "-%}") == 0) {
        end = skip_space_after_end(r + 3);
      } else if (src_.compare(r, 2, "%}") == 0) {
        end = r + 2;
        if (opt_.trim_blocks && end < src_.size() && src_[end] == '\n') ++end;
      } else {
        continue;
      }
      emit_text(std::string_view(src_).substr(q, s - q), q, esign, false);
      pos_ = end;
      line_starting_ = src_[end - 1] == '\n';
      return true;
    }
    fail("Missing end of raw directive", hit);
  }

  void lex_comment(size_t p) {
    for (size_t e = src_.find("#}", p); e != std::string::npos; e = src_.find("#}", e + 1)) {
      size_t end = e + 2;
      if (e > p && src_[e - 1] == '-') {
        end = skip_space_after_end(end);
      } else if (opt_.trim_blocks && end < src_.size() && src_[end] == '\n') {
        ++end;
      }
      pos_ = end;
      line_starting_ = src_[end - 1] == '\n';
      return;
    }
    fail("Missing end of comment tag", p - 2);
  }

  // Tokens of one {{ }} or {% %} tag, up to and including its end.
  void lex_tag(bool is_variable) {
    std::vector<char> balance;
    const size_t tag_start = pos_;
    while (true) {
      if (pos_ >= src_.size()) fail("unexpected end of template, expected the end of the tag", tag_start);
      const char c = src_[pos_];
      if (balance.empty() && try_tag_end(is_variable)) return;
      if (is_py_space(static_cast<unsigned char>(c))) {
        ++pos_;
        continue;
      }
      if (is_digit(c)) {
        lex_number();
      } else if (is_ident_start(c)) {
        size_t e = pos_;
        while (e < src_.size() && is_ident_char(src_[e])) ++e;
        push(Tok::kName, src_.substr(pos_, e - pos_), pos_);
        pos_ = e;
      } else if (c == '\'' || c == '"') {
        lex_string();
      } else {
        lex_operator(balance);
      }
    }
  }

  bool try_tag_end(bool is_variable) {
    const char close = is_variable ? '}' : '%';
    const size_t p = pos_;
    if (!is_variable && src_.compare(p, 3, "+%}") == 0) {
      push(Tok::kBlockEnd, "", p);
      pos_ = p + 3;
      line_starting_ = false;
      return true;
    }
    if (src_[p] == '-' && p + 2 < src_.size() && src_[p + 1] == close && src_[p + 2] == '}') {
      push(is_variable ? Tok::kVarEnd : Tok::kBlockEnd, "", p);
      pos_ = skip_space_after_end(p + 3);
      line_starting_ = src_[pos_ - 1] == '\n';
      return true;
    }
    if (src_[p] == close && p + 1 < src_.size() && src_[p + 1] == '}') {
      push(is_variable ? Tok::kVarEnd : Tok::kBlockEnd, "", p);
      pos_ = p + 2;
      if (!is_variable && opt_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
      line_starting_ = src_[pos_ - 1] == '\n';
      return true;
    }
    return false;
  }

  // Digits with optional `_` separators; returns the end.
  size_t scan_digits(size_t p) {
    if (p >= src_.size() || !is_digit(src_[p])) return p;
    while (p < src_.size()) {
      if (is_digit(src_[p])) {
        ++p;
      } else if (src_[p] == '_' && p + 1 < src_.size() && is_digit(src_[p + 1])) {
        ++p;
      } else {
        break;
      }
    }
    return p;
  }

  void lex_number() {
    const size_t start = pos_;
    // 0b / 0o / 0x integers.
    if (src_[pos_] == '0' && pos_ + 1 < src_.size() && std::string_view("bBoOxX").find(src_[pos_ + 1]) != std::string_view::npos) {
      const char k = static_cast<char>(src_[pos_ + 1] | 0x20);
      const int base = k == 'b' ? 2 : (k == 'o' ? 8 : 16);
      size_t p = pos_ + 2;
      int64_t v = 0;
      bool any = false;
      while (p < src_.size()) {
        if (src_[p] == '_') {
          ++p;
          continue;
        }
        const int d = hex_value(src_[p]);
        if (d < 0 || d >= base) break;
        if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v)) fail("integer literal too large", start);
        any = true;
        ++p;
      }
      if (any) {
        push(Tok::kInt, src_.substr(start, p - start), start).int_value = v;
        pos_ = p;
        return;
      }
    }
    size_t p = scan_digits(pos_);
    bool is_float = false;
    const bool after_dot = start > 0 && src_[start - 1] == '.';  // `x.0.1` is two lookups
    if (!after_dot && p + 1 < src_.size() && src_[p] == '.' && is_digit(src_[p + 1])) {
      p = scan_digits(p + 1);
      is_float = true;
    }
    if (!after_dot && p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && is_digit(src_[q])) {
        p = scan_digits(q);
        is_float = true;
      }
    }
    std::string digits;
    for (size_t i = start; i < p; ++i) {
      if (src_[i] != '_') digits += src_[i];
    }
    Token& t = push(is_float ? Tok::kFloat : Tok::kInt, digits, start);
    if (is_float) {
      t.float_value = std::strtod(digits.c_str(), nullptr);
    } else {
      int64_t v = 0;
      for (char d : digits) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, d - '0', &v)) {
          fail("integer literal too large", start);
        }
      }
      t.int_value = v;
    }
    pos_ = p;
  }

  void lex_string() {
    const size_t start = pos_;
    const char quote = src_[pos_];
    size_t p = pos_ + 1;
    std::string out;
    while (true) {
      if (p >= src_.size()) fail("unexpected char '" + std::string(1, quote) + "'", start);
      const char c = src_[p];
      if (c == quote) break;
      if (c != '\\') {
        out += c;
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) fail("unexpected char '" + std::string(1, quote) + "'", start);
      p = decode_escape(p, out);
    }
    push(Tok::kString, std::move(out), start);
    pos_ = p + 1;
  }

  // Python's unicode-escape decoding of the escape at src_[p] == '\\'.
  size_t decode_escape(size_t p, std::string& out) {
    const char e = src_[p + 1];
    switch (e) {
      case '\n': return p + 2;
      case '\\': out += '\\'; return p + 2;
      case '\'': out += '\''; return p + 2;
      case '"': out += '"'; return p + 2;
      case 'a': out += '\a'; return p + 2;
      case 'b': out += '\b'; return p + 2;
      case 'f': out += '\f'; return p + 2;
      case 'n': out += '\n'; return p + 2;
      case 'r': out += '\r'; return p + 2;
      case 't': out += '\t'; return p + 2;
      case 'v': out += '\v'; return p + 2;
      default: break;
    }
    if (e >= '0' && e <= '7') {
      size_t q = p + 1;
      char32_t v = 0;
      for (int k = 0; k < 3 && q < src_.size() && src_[q] >= '0' && src_[q] <= '7'; ++k) v = v * 8 + (src_[q++] - '0');
      append_utf8(out, v);
      return q;
    }
    const int width = e == 'x' ? 2 : (e == 'u' ? 4 : (e == 'U' ? 8 : 0));
    if (width == 0) {
      out += '\\';  // unknown escapes stay as written
      return p + 1;
    }
    char32_t v = 0;
    for (int k = 0; k < width; ++k) {
      const size_t q = p + 2 + k;
      const int d = q < src_.size() ? hex_value(src_[q]) : -1;
      if (d < 0) fail("truncated \\" + std::string(1, e) + " escape in string literal", p);
      v = v * 16 + static_cast<char32_t>(d);
    }
    if (v > 0x10FFFF) fail("illegal Unicode character in string literal", p);
    append_utf8(out, v);
    return p + 2 + width;
  }

  void lex_operator(std::vector<char>& balance) {
    static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    const size_t p = pos_;
    for (std::string_view op : kTwo) {
      if (src_.compare(p, 2, op) == 0) {
        push(Tok::kOp, std::string(op), p);
        pos_ += 2;
        return;
      }
    }
    const char c = src_[p];
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
      char32_t cp;
      utf8_next(src_, p, &cp);
      std::string shown;
      append_utf8(shown, cp);
      fail("unexpected char '" + shown + "'", p);
    }
    if (c == '(' || c == '[' || c == '{') {
      if (balance.size() >= 256) fail("brackets nested too deeply", p);
      balance.push_back(c == '(' ? ')' : (c == '[' ? ']' : '}'));
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) fail("unexpected '" + std::string(1, c) + "'", p);
      if (balance.back() != c) {
        fail("unexpected '" + std::string(1, c) + "', expected '" + std::string(1, balance.back()) + "'", p);
      }
      balance.pop_back();
    }
    push(Tok::kOp, std::string(1, c), p);
    ++pos_;
  }

  std::string src_;
  LexOptions opt_;
  size_t pos_ = 0;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
  size_t loc_pos_ = 0;
  int loc_line_ = 1;
  size_t loc_line_start_ = 0;
};

}  // namespace

std::vector<Token> lex(std::string_view source, const LexOptions& options) {
  if (source.size() > kMaxSourceBytes) throw Error("template source is too large", 1, 1);
  return Lexer(source, options).run();
}

}  // namespace tessera::jinja
