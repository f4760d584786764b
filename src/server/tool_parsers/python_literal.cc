#include "server/tool_parsers/python_literal.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "server/tool_parsers/tool_parser_util.h"

namespace tessera::server {
namespace {

// Nesting beyond this is refused rather than recursed into (Python itself stops near 200).
constexpr int kMaxDepth = 100;
// CPython refuses int <-> decimal text conversions longer than this (sys.int_info).
constexpr size_t kMaxIntDigits = 4300;

using Kind = PyValue::Kind;

PyValue make_value(Kind kind, std::string text = {}) {
  PyValue v;
  v.kind = kind;
  v.text = std::move(text);
  return v;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_word(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }
char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

int digit_value(char c) {
  if (is_digit(c)) return c - '0';
  const char l = ascii_lower(c);
  return l >= 'a' && l <= 'z' ? l - 'a' + 10 : 99;
}

// dec = dec * mul + add, on decimal digit text (unbounded, like Python ints).
void mul_add(std::string& dec, unsigned mul, unsigned add) {
  unsigned carry = add;
  for (size_t i = dec.size(); i-- > 0;) {
    const unsigned d = static_cast<unsigned>(dec[i] - '0') * mul + carry;
    dec[i] = static_cast<char>('0' + d % 10);
    carry = d / 10;
  }
  while (carry != 0) {
    dec.insert(dec.begin(), static_cast<char>('0' + carry % 10));
    carry /= 10;
  }
}

// End of a Python digitpart at s[i] (digit (["_"] digit)*); i itself when there is none.
size_t scan_digits(std::string_view s, size_t i, int radix = 10) {
  size_t end = i;
  bool need_digit = true;  // at the start and after '_'
  for (size_t k = i; k < s.size(); ++k) {
    if (s[k] == '_' && !need_digit) {
      need_digit = true;
      continue;
    }
    if (digit_value(s[k]) >= radix) break;
    need_digit = false;
    end = k + 1;
  }
  return end;
}

std::string without_underscores(std::string_view s) {
  std::string out(s);
  std::erase(out, '_');
  return out;
}

double to_double(const std::string& clean) {
  double v = 0.0;
  const auto r = std::from_chars(clean.data(), clean.data() + clean.size(), v);
  // Python rounds overflow to inf and underflow to 0; strtod does the same.
  if (r.ec == std::errc::result_out_of_range) v = std::strtod(clean.c_str(), nullptr);
  return v;
}

// An int from decimal digits; nullopt past CPython's digit limit.
std::optional<PyValue> int_value(std::string_view digits, bool negative) {
  const size_t first = digits.find_first_not_of('0');
  if (first != std::string_view::npos && digits.size() - first > kMaxIntDigits) return std::nullopt;
  if (first == std::string_view::npos) return make_value(Kind::kInt, "0");
  return make_value(Kind::kInt, (negative ? "-" : "") + std::string(digits.substr(first)));
}

// Decimal float text (with exponent, no underscores) of a Python float-literal grammar match
// [digitpart] ["." [digitpart]] [exponent], or "" when s is not all such a float.
std::string match_float(std::string_view s) {
  size_t i = scan_digits(s, 0);
  bool digits = i > 0;
  if (i < s.size() && s[i] == '.') {
    const size_t f = scan_digits(s, i + 1);
    digits = digits || f > i + 1;
    i = f;
  }
  if (!digits) return "";
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t e = i + 1;
    if (e < s.size() && (s[e] == '+' || s[e] == '-')) ++e;
    const size_t end = scan_digits(s, e);
    if (end == e) return "";
    i = end;
  }
  return i == s.size() ? without_underscores(s) : "";
}

// A Python source number token: 0x/0o/0b ints, decimal ints (no leading zeros), floats.
// Imaginary numbers fail: json.dumps cannot print them.
bool number_token_value(std::string_view tok, bool negative, PyValue& out) {
  if (tok.size() > 2 && tok[0] == '0' && std::string_view("xXoObB").find(tok[1]) != std::string_view::npos) {
    const char r = ascii_lower(tok[1]);
    const int radix = r == 'x' ? 16 : r == 'o' ? 8 : 2;
    size_t i = 2;
    if (tok[i] == '_') ++i;
    if (scan_digits(tok, i, radix) != tok.size() || i == tok.size()) return false;
    std::string digits = without_underscores(tok.substr(i));
    const size_t first = digits.find_first_not_of('0');
    // Bounded before converting: the result may have kMaxIntDigits decimal digits (< 10/3 bits each).
    const size_t bits_per_digit = radix == 16 ? 4 : radix == 8 ? 3 : 1;
    const size_t bits = first == std::string::npos ? 0 : (digits.size() - first) * bits_per_digit;
    if (bits > kMaxIntDigits * 10 / 3) {
      return false;
    }
    std::string dec = "0";
    for (char c : digits) mul_add(dec, static_cast<unsigned>(radix), static_cast<unsigned>(digit_value(c)));
    std::optional<PyValue> v = int_value(dec, negative);
    if (v) out = std::move(*v);
    return v.has_value();
  }
  if (scan_digits(tok, 0) == tok.size()) {
    if (tok[0] == '0' && tok.find_first_not_of("0_") != std::string_view::npos) return false;
    std::optional<PyValue> v = int_value(without_underscores(tok), negative);
    if (v) out = std::move(*v);
    return v.has_value();
  }
  const std::string f = match_float(tok);
  if (f.empty()) return false;
  out.kind = Kind::kFloat;
  out.number = negative ? -to_double(f) : to_double(f);
  return true;
}

// Python dict semantics for a dict being built: a repeated key keeps its first place and takes
// the last value; keys json.dumps cannot print (tuples) are refused.
class DictIndex {
 public:
  bool put(PyValue& dict, const PyValue& key, PyValue value) {
    std::string jkey;
    std::string eq;
    switch (key.kind) {
      case Kind::kStr: jkey = key.text, eq = "s" + key.text; break;
      case Kind::kInt: jkey = key.text, eq = "n" + key.text; break;
      case Kind::kBool: jkey = key.flag ? "true" : "false", eq = key.flag ? "n1" : "n0"; break;
      case Kind::kNone: jkey = "null", eq = "z"; break;
      case Kind::kFloat:
        jkey = python_float_repr(key.number);
        eq = std::isfinite(key.number) && std::floor(key.number) == key.number
                 ? "n" + python_int_of_float(key.number)
                 : "f" + jkey;
        break;
      default: return false;
    }
    dict.kind = Kind::kDict;
    auto [it, fresh] = index_.try_emplace(eq, dict.members.size());
    if (fresh) {
      dict.members.push_back({std::move(jkey), std::move(eq), std::move(value)});
    } else {
      dict.members[it->second].value = std::move(value);
    }
    return true;
  }

 private:
  std::unordered_map<std::string, size_t> index_;
};

// A recursive-descent reader of one Python literal. Every read that runs into the end of the
// text reports "short": invalid when the text is whole, incomplete while it may still grow.
class LiteralReader {
 public:
  LiteralReader(std::string_view s, size_t pos, bool at_end) : s_(s), pos_(pos), at_end_(at_end) {}

  LiteralStatus read(PyValue& out) { return value(out, 0) ? LiteralStatus::kOk : status_; }
  size_t pos() const { return pos_; }

 private:
  bool invalid() {
    status_ = LiteralStatus::kInvalid;
    return false;
  }
  bool short_text() {
    status_ = at_end_ ? LiteralStatus::kInvalid : LiteralStatus::kIncomplete;
    return false;
  }
  bool next_token() {
    pos_ = skip_python_space(s_, pos_);
    return pos_ < s_.size() || short_text();
  }
  static bool is_quote(char c) { return c == '"' || c == '\''; }

  bool value(PyValue& out, int depth) {
    if (depth > kMaxDepth) return invalid();
    if (!next_token()) return false;
    const char c = s_[pos_];
    if (c == '[') {
      ++pos_;
      out.kind = Kind::kList;
      return sequence(out.items, ']', depth + 1);
    }
    if (c == '(') return paren(out, depth + 1);
    if (c == '{') return dict(out, depth + 1);
    if (is_quote(c)) return strings(out);
    if (c == '-' || c == '+') {
      ++pos_;
      if (!next_token()) return false;
      if (!is_digit(s_[pos_]) && s_[pos_] != '.') return invalid();
      return number(out, c == '-');
    }
    if (is_digit(c) || c == '.') return number(out, false);
    if (is_alpha(c) || c == '_') return word(out);
    return invalid();
  }

  // Items up to `close`, a trailing comma allowed; the opening bracket is already read.
  bool sequence(std::vector<PyValue>& items, char close, int depth) {
    for (;;) {
      if (!next_token()) return false;
      if (s_[pos_] == close) break;
      items.emplace_back();
      if (!value(items.back(), depth) || !next_token()) return false;
      if (s_[pos_] == close) break;
      if (s_[pos_] != ',') return invalid();
      ++pos_;
    }
    ++pos_;
    return true;
  }

  // "()" and "(a, b)" are tuples (JSON arrays); "(a)" is just a.
  bool paren(PyValue& out, int depth) {
    ++pos_;
    if (!next_token()) return false;
    out.kind = Kind::kList;
    if (s_[pos_] == ')') {
      ++pos_;
      return true;
    }
    PyValue first;
    if (!value(first, depth) || !next_token()) return false;
    if (s_[pos_] == ')') {
      ++pos_;
      out = std::move(first);
      return true;
    }
    if (s_[pos_] != ',') return invalid();
    ++pos_;
    out.items.push_back(std::move(first));
    return sequence(out.items, ')', depth);
  }

  // A set ({1, 2}) is refused at its first ',' : JSON has no sets.
  bool dict(PyValue& out, int depth) {
    ++pos_;
    out.kind = Kind::kDict;
    DictIndex index;
    for (;;) {
      if (!next_token()) return false;
      if (s_[pos_] == '}') break;
      PyValue key;
      PyValue val;
      if (!value(key, depth) || !next_token()) return false;
      if (s_[pos_] != ':') return invalid();
      ++pos_;
      if (!value(val, depth)) return false;
      if (!index.put(out, key, std::move(val))) return invalid();
      if (!next_token()) return false;
      if (s_[pos_] == '}') break;
      if (s_[pos_] != ',') return invalid();
      ++pos_;
    }
    ++pos_;
    return true;
  }

  // True, False, None, or the prefix of a string; any other name is not a literal.
  bool word(PyValue& out) {
    const size_t start = pos_;
    while (pos_ < s_.size() && is_word(s_[pos_])) ++pos_;
    if (pos_ == s_.size() && !at_end_) return short_text();
    const std::string_view w = s_.substr(start, pos_ - start);
    if (pos_ < s_.size() && is_quote(s_[pos_])) {
      // Bytes and f-strings are not values json.dumps can print.
      if (w.size() != 1 || (ascii_lower(w[0]) != 'r' && ascii_lower(w[0]) != 'u')) return invalid();
      pos_ = start;
      return strings(out);
    }
    if (w == "True" || w == "False") {
      out.kind = Kind::kBool;
      out.flag = w == "True";
      return true;
    }
    if (w == "None") {
      out.kind = Kind::kNone;
      return true;
    }
    return invalid();
  }

  // Adjacent string pieces concatenate ("a" 'b' -> "ab"), so a string ends only where the
  // next token is known not to be another piece.
  bool strings(PyValue& out) {
    out.kind = Kind::kStr;
    for (;;) {
      bool raw = false;
      if (!is_quote(s_[pos_])) {
        raw = ascii_lower(s_[pos_]) == 'r';
        ++pos_;
      }
      if (!piece(out.text, raw)) return false;
      const size_t p = skip_python_space(s_, pos_);
      if (p >= s_.size()) return at_end_ || short_text();
      const char c = ascii_lower(s_[p]);
      if (c == 'r' || c == 'u') {
        if (p + 1 >= s_.size()) return at_end_ || short_text();
        if (!is_quote(s_[p + 1])) return true;
      } else if (!is_quote(c)) {
        return true;
      }
      pos_ = p;
    }
  }

  // One quoted piece at s_[pos_], its decoded text appended to out.
  bool piece(std::string& out, bool raw) {
    const char q = s_[pos_];
    if (pos_ + 2 >= s_.size() && !at_end_) return short_text();  // "" may yet open """
    const bool triple = pos_ + 2 < s_.size() && s_[pos_ + 1] == q && s_[pos_ + 2] == q;
    pos_ += triple ? 3 : 1;
    for (;;) {
      if (pos_ >= s_.size()) return short_text();
      const auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == static_cast<unsigned char>(q)) {
        if (!triple) return ++pos_, true;
        // In a triple-quoted string a quote closes it only together with the next two.
        const std::string_view next = s_.substr(pos_ + 1, 2);
        if (next.find_first_not_of(q) == std::string_view::npos) {
          if (next.size() < 2) return short_text();
          return pos_ += 3, true;
        }
        out += q;
        ++pos_;
      } else if (c == '\\') {
        if (!escape(out, raw, q)) return false;
      } else if (c == '\n' || c == '\r') {
        if (!triple) return invalid();
        if (!newline(out)) return false;
      } else if (c == 0) {
        return invalid();
      } else if (!utf8_char(out)) {
        return false;
      }
    }
  }

  // Source lines end in \n, \r\n or \r; Python reads each as \n.
  bool newline(std::string& out) {
    if (s_[pos_] == '\r') {
      if (pos_ + 1 >= s_.size() && !at_end_) return short_text();
      if (pos_ + 1 < s_.size() && s_[pos_ + 1] == '\n') ++pos_;
    }
    ++pos_;
    out += '\n';
    return true;
  }

  bool utf8_char(std::string& out) {
    uint32_t cp = 0;
    size_t len = 0;
    switch (decode_utf8(s_, pos_, false, cp, len)) {
      case Utf8::kShort: return short_text();
      case Utf8::kBad: return invalid();
      case Utf8::kOk: break;
    }
    out.append(s_.substr(pos_, len));
    pos_ += len;
    return true;
  }

  // A backslash sequence at s_[pos_]; unknown escapes keep their backslash, as in Python.
  bool escape(std::string& out, bool raw, char q) {
    if (pos_ + 1 >= s_.size()) return short_text();
    const char e = s_[pos_ + 1];
    if (raw) {
      // In r"..." the backslash stays and only stops the next quote or backslash from acting.
      out += '\\';
      pos_ += (e == q || e == '\\') ? 2 : 1;
      if (e == q || e == '\\') out += e;
      return true;
    }
    pos_ += 2;
    static constexpr std::string_view kSimple = "\\'\"abfnrtv";
    static constexpr std::string_view kMapped = "\\'\"\a\b\f\n\r\t\v";
    if (const size_t k = kSimple.find(e); k != std::string_view::npos) {
      out += kMapped[k];
      return true;
    }
    switch (e) {
      case '\n': return true;  // line continuation
      case '\r':
        if (pos_ >= s_.size() && !at_end_) return short_text();
        if (pos_ < s_.size() && s_[pos_] == '\n') ++pos_;
        return true;
      case 'x': return hex_escape(out, 2);
      case 'u': return hex_escape(out, 4);
      case 'U': return hex_escape(out, 8);
      case 'N': return invalid();  // \N{NAME} needs Unicode's name table
      default: break;
    }
    if (e >= '0' && e <= '7') return octal_escape(out, static_cast<uint32_t>(e - '0'));
    out += '\\';
    --pos_;  // the character after the backslash is read as itself
    return true;
  }

  bool hex_escape(std::string& out, size_t n) {
    uint32_t cp = 0;
    for (size_t k = 0; k < n; ++k) {
      if (pos_ + k >= s_.size()) return short_text();
      const int d = digit_value(s_[pos_ + k]);
      if (d >= 16) return invalid();
      cp = cp * 16 + static_cast<uint32_t>(d);
    }
    if (cp > 0x10FFFF) return invalid();
    pos_ += n;
    append_utf8(out, cp);
    return true;
  }

  bool octal_escape(std::string& out, uint32_t cp) {
    for (int k = 0; k < 2; ++k) {
      if (pos_ >= s_.size()) {
        if (!at_end_) return short_text();
        break;
      }
      if (s_[pos_] < '0' || s_[pos_] > '7') break;
      cp = cp * 8 + static_cast<uint32_t>(s_[pos_++] - '0');
    }
    append_utf8(out, cp);
    return true;
  }

  // The token is the longest run of number characters (exponent signs included), so "1e"
  // at the end of a growing text waits for what follows.
  bool number(PyValue& out, bool negative) {
    const size_t start = pos_;
    const bool radix = pos_ + 1 < s_.size() && s_[pos_] == '0' && is_alpha(s_[pos_ + 1]) &&
                       ascii_lower(s_[pos_ + 1]) != 'e';
    size_t end = pos_;
    while (end < s_.size()) {
      const char c = s_[end];
      const bool sign = (c == '+' || c == '-') && !radix && end > start && ascii_lower(s_[end - 1]) == 'e';
      if (!is_word(c) && c != '.' && !sign) break;
      ++end;
    }
    if (end == s_.size() && !at_end_) return short_text();
    pos_ = end;
    return number_token_value(s_.substr(start, end - start), negative, out) || invalid();
  }

  std::string_view s_;
  size_t pos_;
  bool at_end_;
  LiteralStatus status_ = LiteralStatus::kInvalid;
};

// json.loads through nlohmann's SAX parser into Python values: numbers keep their text where
// Python's would (ints are unbounded), repeated keys follow dict semantics. Python also reads
// NaN, Infinity and lone \u surrogates, which this strict reader refuses.
class JsonBuilder final : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::optional<PyValue> root;

  bool null() override { return put(PyValue{}); }
  bool boolean(bool b) override {
    PyValue v = make_value(Kind::kBool);
    v.flag = b;
    return put(std::move(v));
  }
  bool number_integer(number_integer_t n) override { return put_int(std::to_string(n)); }
  bool number_unsigned(number_unsigned_t n) override { return put_int(std::to_string(n)); }
  bool number_float(number_float_t x, const string_t& text) override {
    if (text.find_first_of(".eE") == std::string::npos) return put_int(text);  // an int past 64 bits
    PyValue v = make_value(Kind::kFloat);
    v.number = x;
    return put(std::move(v));
  }
  bool string(string_t& s) override { return put(make_value(Kind::kStr, std::move(s))); }
  bool binary(binary_t&) override { return false; }
  bool start_object(std::size_t) override { return open(Kind::kDict); }
  bool key(string_t& k) override {
    stack_.back().key = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(Kind::kList); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  struct Frame {
    PyValue value;
    std::string key;  // an object's pending key
    DictIndex index;
  };

  bool put_int(std::string_view text) {
    const bool negative = text.starts_with('-');
    std::optional<PyValue> v = int_value(text.substr(negative ? 1 : 0), negative);
    return v && put(std::move(*v));
  }
  bool open(Kind kind) {
    if (stack_.size() >= static_cast<size_t>(kMaxDepth)) return false;
    stack_.emplace_back();
    stack_.back().value.kind = kind;
    return true;
  }
  bool close() {
    Frame done = std::move(stack_.back());
    stack_.pop_back();
    return put(std::move(done.value));
  }
  bool put(PyValue v) {
    if (stack_.empty()) {
      root = std::move(v);
      return true;
    }
    Frame& top = stack_.back();
    if (top.value.kind == Kind::kList) {
      top.value.items.push_back(std::move(v));
      return true;
    }
    return top.index.put(top.value, make_value(Kind::kStr, std::move(top.key)), std::move(v));
  }

  std::vector<Frame> stack_;
};

std::string_view strip_python_space(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

}  // namespace

LiteralStatus parse_python_literal(std::string_view text, size_t& pos, bool at_end, PyValue& out) {
  LiteralReader reader(text, pos, at_end);
  const LiteralStatus status = reader.read(out);
  if (status == LiteralStatus::kOk) pos = reader.pos();
  return status;
}

size_t skip_python_space(std::string_view text, size_t pos) {
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == '#') {
      const size_t nl = text.find('\n', pos);
      pos = nl == std::string_view::npos ? text.size() : nl;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
      ++pos;
    } else {
      break;
    }
  }
  return pos;
}

std::optional<PyValue> python_literal_eval(std::string_view text) {
  size_t pos = 0;
  PyValue v;
  if (parse_python_literal(text, pos, true, v) != LiteralStatus::kOk) return std::nullopt;
  pos = skip_python_space(text, pos);
  if (pos < text.size() && text[pos] == ',') {  // "1, 2" is a tuple
    PyValue tuple = make_value(Kind::kList);
    tuple.items.push_back(std::move(v));
    while (pos < text.size() && text[pos] == ',' && (pos = skip_python_space(text, pos + 1)) < text.size()) {
      tuple.items.emplace_back();
      if (parse_python_literal(text, pos, true, tuple.items.back()) != LiteralStatus::kOk) return std::nullopt;
      pos = skip_python_space(text, pos);
    }
    v = std::move(tuple);
  }
  if (pos != text.size()) return std::nullopt;
  return v;
}

std::optional<PyValue> python_json_loads(std::string_view text) {
  JsonBuilder builder;
  try {
    if (!nlohmann::json::sax_parse(text.begin(), text.end(), &builder)) return std::nullopt;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  return std::move(builder.root);
}

std::optional<PyValue> python_int(std::string_view text) {
  std::string_view s = strip_python_space(text);
  const bool negative = !s.empty() && s[0] == '-';
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  if (s.empty() || scan_digits(s, 0) != s.size()) return std::nullopt;
  return int_value(without_underscores(s), negative);
}

std::optional<double> python_float(std::string_view text) {
  std::string_view s = strip_python_space(text);
  const bool negative = !s.empty() && s[0] == '-';
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  std::string lower;
  for (char c : s) lower += ascii_lower(c);
  double v = 0.0;
  if (lower == "inf" || lower == "infinity") {
    v = HUGE_VAL;
  } else if (lower == "nan") {
    v = std::nan("");
  } else {
    const std::string f = match_float(s);
    if (f.empty()) return std::nullopt;
    v = to_double(f);
  }
  return negative ? -v : v;
}

std::string python_int_of_float(double x) {
  if (std::fabs(x) < 9.0e18) return std::to_string(static_cast<long long>(x));
  int exp = 0;
  const double m = std::frexp(std::fabs(x), &exp);  // |x| = m * 2^exp, 0.5 <= m < 1
  const auto mantissa = static_cast<uint64_t>(std::ldexp(m, 53));
  std::string dec = std::to_string(mantissa);
  for (int i = 53; i < exp; ++i) mul_add(dec, 2, 0);
  return (x < 0 ? "-" : "") + dec;
}

bool valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    size_t len = 0;
    if (decode_utf8(text, i, false, cp, len) != Utf8::kOk) return false;
    i += len;
  }
  return true;
}

}  // namespace tessera::server
