#include "server/tool_parsers/json_scan.h"

#include <cstdlib>

#include "server/tool_parsers/python_literal.h"

namespace tessera::server {
namespace {

bool is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Bytes that can appear in a number or a literal (true, NaN, -Infinity, ...).
bool is_atom_byte(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '+' ||
         c == '.';
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Python json's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?
bool parse_number_shape(std::string_view s, bool& is_float) {
  size_t i = 0;
  auto digits = [&] {
    size_t from = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    return i - from;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i < s.size() && s[i] == '0') {
    ++i;
  } else if (digits() == 0) {
    return false;
  }
  is_float = false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
    is_float = true;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
    is_float = true;
  }
  return i == s.size();
}

constexpr uint32_t kReplacement = 0xFFFD;

// How many continuation bytes follow a lead byte; 0 for bytes that cannot start a character.
size_t utf8_continuations(unsigned char c) {
  if (c >= 0xC2 && c <= 0xDF) return 1;
  if (c >= 0xE0 && c <= 0xEF) return 2;
  if (c >= 0xF0 && c <= 0xF4) return 3;
  return 0;
}

}  // namespace

// ---- JsonNormalizer ----

size_t JsonNormalizer::feed(std::string_view in) {
  size_t i = 0;
  while (i < in.size() && !done() && !failed()) {
    if (step(static_cast<unsigned char>(in[i]))) ++i;
  }
  return i;
}

void JsonNormalizer::finish() {
  if (mode_ == Mode::kAtom && stack_.empty()) {
    finish_atom();
    return;
  }
  if (!done()) fail();
}

std::string JsonNormalizer::take_output() {
  std::string s;
  s.swap(out_);
  return s;
}

bool JsonNormalizer::step(unsigned char c) {
  switch (mode_) {
    case Mode::kValue:
      return step_value(c);
    case Mode::kString:
      step_string(c);
      return true;
    case Mode::kEscape:
      step_escape(c);
      return true;
    case Mode::kUnicode:
      step_unicode(c);
      return true;
    case Mode::kAtom:
      if (is_atom_byte(c)) {
        atom_ += static_cast<char>(c);
        return true;
      }
      finish_atom();
      return false;  // the byte after a number belongs to what follows it
    case Mode::kDone:
    case Mode::kFailed:
      return false;
    default:
      return step_structure(c);
  }
}

bool JsonNormalizer::step_value(unsigned char c) {
  if (is_ws(c)) return true;
  if (first_ && c == ']' && !stack_.empty() && stack_.back() == '[') {
    close(']');
    return true;
  }
  const bool top = !started_;
  started_ = true;
  first_ = false;
  if (c == '{' || c == '[') {
    open(static_cast<char>(c));
  } else if (c == '"') {
    top_string_ = top;
    in_key_ = false;
    out_ += '"';
    mode_ = Mode::kString;
  } else if (is_atom_byte(c)) {
    atom_.assign(1, static_cast<char>(c));
    mode_ = Mode::kAtom;
  } else {
    fail();
  }
  return true;
}

// Key, colon and after-value positions: whitespace, punctuation or a key's opening quote.
bool JsonNormalizer::step_structure(unsigned char c) {
  if (is_ws(c)) return true;
  if (mode_ == Mode::kKey) {
    if (c == '"') {
      in_key_ = true;
      out_ += '"';
      mode_ = Mode::kString;
    } else if (c == '}' && first_) {
      close('}');
    } else {
      fail();
    }
    first_ = false;
    return true;
  }
  if (mode_ == Mode::kColon) {
    if (c != ':') return fail(), true;
    out_ += ": ";
    mode_ = Mode::kValue;
    return true;
  }
  // kAfterValue
  const char top = stack_.back();
  if (c == ',') {
    out_ += ", ";
    mode_ = top == '{' ? Mode::kKey : Mode::kValue;
  } else if ((c == '}' && top == '{') || (c == ']' && top == '[')) {
    close(static_cast<char>(c));
  } else {
    fail();
  }
  return true;
}

void JsonNormalizer::open(char bracket) {
  stack_ += bracket;
  out_ += bracket;
  first_ = true;
  mode_ = bracket == '{' ? Mode::kKey : Mode::kValue;
}

void JsonNormalizer::close(char bracket) {
  stack_.pop_back();
  out_ += bracket;
  first_ = false;
  value_end();
}

void JsonNormalizer::value_end() { mode_ = stack_.empty() ? Mode::kDone : Mode::kAfterValue; }

void JsonNormalizer::finish_atom() {
  bool is_float = false;
  if (atom_ == "true" || atom_ == "false" || atom_ == "null" || atom_ == "NaN" || atom_ == "Infinity" ||
      atom_ == "-Infinity") {
    out_ += atom_;
  } else if (!parse_number_shape(atom_, is_float)) {
    return fail();
  } else if (is_float) {
    out_ += python_float_repr(std::strtod(atom_.c_str(), nullptr));
  } else {
    out_ += atom_ == "-0" ? "0" : atom_;  // Python ints: -0 is 0, big ones stay exact
  }
  atom_.clear();
  value_end();
}

void JsonNormalizer::step_string(unsigned char c) {
  if (utf8_need_ > 0) {
    if ((c & 0xC0) == 0x80) {
      utf8_ += static_cast<char>(c);
      if (--utf8_need_ == 0) flush_utf8();
      return;
    }
    utf8_need_ = 0;  // truncated sequence: one replacement character, then `c` as usual
    utf8_.clear();
    code_point(kReplacement);
  }
  if (c == '"') {
    flush_surrogate();
    out_ += '"';
    if (in_key_) {
      mode_ = Mode::kColon;
    } else {
      value_end();
    }
  } else if (c == '\\') {
    mode_ = Mode::kEscape;
  } else if (c < 0x20) {
    fail();  // json.loads rejects raw control characters in strings
  } else if (c < 0x80) {
    code_point(c);
  } else {
    string_byte(c);
  }
}

void JsonNormalizer::string_byte(unsigned char c) {
  utf8_need_ = utf8_continuations(c);
  if (utf8_need_ == 0) return code_point(kReplacement);
  utf8_.assign(1, static_cast<char>(c));
}

void JsonNormalizer::flush_utf8() {
  flush_surrogate();
  uint32_t cp = 0;
  size_t len = 0;
  if (decode_utf8(utf8_, 0, false, cp, len) == Utf8::kOk) {
    put_raw(utf8_);
  } else {
    put_code_point(kReplacement);
  }
  utf8_.clear();
}

void JsonNormalizer::step_escape(unsigned char c) {
  mode_ = Mode::kString;
  switch (c) {
    case '"': return code_point('"');
    case '\\': return code_point('\\');
    case '/': return code_point('/');
    case 'b': return code_point('\b');
    case 'f': return code_point('\f');
    case 'n': return code_point('\n');
    case 'r': return code_point('\r');
    case 't': return code_point('\t');
    case 'u':
      mode_ = Mode::kUnicode;
      hex_ = 0;
      hex_digits_ = 0;
      return;
    default:
      return fail();
  }
}

void JsonNormalizer::step_unicode(unsigned char c) {
  uint32_t d = 0;
  if (c >= '0' && c <= '9') {
    d = c - '0';
  } else if (c >= 'a' && c <= 'f') {
    d = c - 'a' + 10;
  } else if (c >= 'A' && c <= 'F') {
    d = c - 'A' + 10;
  } else {
    return fail();
  }
  hex_ = hex_ * 16 + d;
  if (++hex_digits_ < 4) return;
  mode_ = Mode::kString;
  code_point(hex_);
}

// A decoded UTF-16 unit or code point: pairs surrogates like Python's decoder does.
void JsonNormalizer::code_point(uint32_t cp) {
  if (high_surrogate_ != 0) {
    if (cp >= 0xDC00 && cp <= 0xDFFF) {
      const uint32_t full = 0x10000 + ((high_surrogate_ - 0xD800) << 10) + (cp - 0xDC00);
      high_surrogate_ = 0;
      return put_code_point(full);
    }
    flush_surrogate();
  }
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    high_surrogate_ = cp;
    return;
  }
  put_code_point(cp);
}

// A lone surrogate cannot be written as UTF-8: keep it as the escape Python would print.
void JsonNormalizer::flush_surrogate() {
  if (high_surrogate_ == 0) return;
  const uint32_t lone = high_surrogate_;
  high_surrogate_ = 0;
  put_code_point(lone);
}

void JsonNormalizer::put_code_point(uint32_t cp) {
  const bool lone_surrogate = cp >= 0xD800 && cp <= 0xDFFF;
  if (top_string_ && stack_.empty() && !in_key_) append_utf8(decoded_, lone_surrogate ? kReplacement : cp);
  append_json_char(out_, cp);
}

void JsonNormalizer::put_raw(std::string_view s) {
  if (top_string_ && stack_.empty() && !in_key_) decoded_.append(s);
  out_.append(s);
}

// ---- CallObjectScanner ----

CallObjectScanner::CallObjectScanner(std::vector<std::string_view> argument_keys)
    : argument_keys_(std::move(argument_keys)) {}

size_t CallObjectScanner::feed(std::string_view in) {
  size_t i = 0;
  while (i < in.size() && !done() && !failed()) {
    if (mode_ == Mode::kKeyText || mode_ == Mode::kValue) {
      i += value_.feed(in.substr(i));
      if (value_.failed()) return fail(), i;
      std::string piece = value_.take_output();
      if (member_ == Member::kArguments && mode_ == Mode::kValue) args_ += piece;
      if (value_.done()) end_member();
      continue;
    }
    if (step_punctuation(static_cast<unsigned char>(in[i]))) ++i;
  }
  return i;
}

std::string CallObjectScanner::take_arguments() {
  std::string s;
  s.swap(args_);
  return s;
}

// Outside keys and values: whitespace, braces, ':' and ','. False leaves `c` for a key.
bool CallObjectScanner::step_punctuation(unsigned char c) {
  if (is_ws(c)) return true;
  switch (mode_) {
    case Mode::kOpen:
      if (c != '{') return fail(), true;
      mode_ = Mode::kKey;
      return true;
    case Mode::kKey:
      if (c == '}' && first_) {
        mode_ = Mode::kDone;
        return true;
      }
      if (c != '"') return fail(), true;
      first_ = false;
      value_ = JsonNormalizer();
      mode_ = Mode::kKeyText;
      return false;  // the key's quote starts the normalizer's string
    case Mode::kColon:
      if (c != ':') return fail(), true;
      value_ = JsonNormalizer();
      mode_ = Mode::kValue;
      return true;
    case Mode::kAfterValue:
      if (c == ',') {
        mode_ = Mode::kKey;
      } else if (c == '}') {
        mode_ = Mode::kDone;
      } else {
        fail();
      }
      return true;
    default:
      fail();
      return true;
  }
}

void CallObjectScanner::end_member() {
  if (mode_ == Mode::kKeyText) {
    const std::string& key = value_.string_value();
    member_ = Member::kOther;
    if (key == "name" && !name_) {
      member_ = Member::kName;
    } else if (!args_seen_) {
      for (std::string_view k : argument_keys_) {
        if (key == k) member_ = Member::kArguments;
      }
    }
    if (member_ == Member::kArguments) args_seen_ = true;
    mode_ = Mode::kColon;
    return;
  }
  if (member_ == Member::kName) {
    if (!value_.is_string()) return fail();  // a call's name must be a string
    name_ = value_.string_value();
  }
  mode_ = Mode::kAfterValue;
}

// ---- ScanningToolParser ----

std::string ScanningToolParser::fallback_id() const { return random_call_id(); }

void ScanningToolParser::scan(bool at_end) {
  while (active() && scan_step(at_end)) {
  }
}

void ScanningToolParser::consume(size_t n) {
  if (holding_ && calls_ == 0) held_.append(buf_, pos_, n);
  pos_ += n;
}

std::string_view ScanningToolParser::skip_space() {
  const std::string_view p = pending();
  size_t n = 0;
  while (n < p.size() && is_ws(static_cast<unsigned char>(p[n]))) ++n;
  consume(n);
  return pending();
}

std::pair<std::string_view, bool> ScanningToolParser::consume_until(std::string_view marker, bool at_end) {
  const std::string_view p = pending();
  const size_t at = p.find(marker);
  const size_t n = at != std::string_view::npos ? at : p.size() - (at_end ? 0 : partial_marker_len(p, marker));
  consume(n);
  return {p.substr(0, n), at != std::string_view::npos};
}

bool ScanningToolParser::scan_content_until(std::string_view marker, bool at_end) {
  const auto [text, found] = consume_until(marker, at_end);
  emit_content(text);
  if (!found) return false;
  begin_calls();
  consume(marker.size());
  return true;
}

bool ScanningToolParser::scan_arguments_until(std::string_view marker, bool at_end) {
  const auto [text, found] = consume_until(marker, at_end);
  emit_arguments(text);
  if (found) consume(marker.size());
  return found;
}

bool ScanningToolParser::drop_rest() {
  consume(pending().size());
  return false;
}

void ScanningToolParser::start_call(const std::string& name) {
  if (calls_ == 0) {
    holding_ = false;
    held_.clear();
    held_.shrink_to_fit();
  }
  ToolCallDelta d;
  d.index = calls_++;
  d.id = ctx_.make_id ? ctx_.make_id() : fallback_id();
  d.name = name;
  out_.tool_calls.push_back(std::move(d));
}

void ScanningToolParser::emit_arguments(std::string_view s) {
  if (s.empty() || calls_ == 0) return;
  if (out_.tool_calls.empty() || out_.tool_calls.back().index != calls_ - 1) {
    ToolCallDelta d;
    d.index = calls_ - 1;
    out_.tool_calls.push_back(std::move(d));
  }
  out_.tool_calls.back().arguments.append(s);
}

bool ScanningToolParser::fail() {
  failed_ = true;
  if (calls_ == 0) {
    emit_content(held_);
    emit_content(pending());
    held_.clear();
    passthrough_ = true;
  } else {
    dead_ = true;
  }
  pos_ = buf_.size();
  return false;
}

ToolStreamDelta ScanningToolParser::feed(std::string_view delta) {
  try {
    if (passthrough_) {
      emit_content(delta);
    } else if (!dead_) {
      buf_.append(delta);
      scan(false);
      buf_.erase(0, pos_);
      pos_ = 0;
    }
  } catch (const std::exception&) {
    fail();  // allocation or the context's make_id threw: degrade instead of breaking the reply
  }
  ToolStreamDelta out;
  std::swap(out, out_);
  return out;
}

ToolStreamDelta ScanningToolParser::finish() {
  try {
    if (active()) scan(true);
    // Call markers without a single well-formed call: the reply was plain text.
    if (active() && calls_ == 0 && holding_) fail();
  } catch (const std::exception&) {
    fail();
  }
  ToolStreamDelta out;
  std::swap(out, out_);
  return out;
}

ExtractedToolCalls ScanningToolParser::extract(const std::string& text) {
  ExtractedToolCalls result;
  result.content = text;
  try {
    std::unique_ptr<ScanningToolParser> p = fresh();
    ToolStreamDelta first = p->feed(text);
    ToolStreamDelta last = p->finish();
    if (p->failed_ || p->calls_ == 0) return result;
    std::string content = first.content + last.content;
    first.tool_calls.insert(first.tool_calls.end(), last.tool_calls.begin(), last.tool_calls.end());
    result.tools_called = true;
    result.tool_calls = join_calls(first.tool_calls);
    result.content = content.empty() ? std::nullopt : std::optional<std::string>(std::move(content));
  } catch (const std::exception&) {
    result = ExtractedToolCalls{false, {}, text};
  }
  return result;
}

ScanningToolParser::CallProgress ScanningToolParser::scan_call_object(CallObjectScanner& call, bool at_end,
                                                                      const char* default_arguments) {
  consume(call.feed(pending()));
  if (call.failed()) return fail(), CallProgress::kFailed;
  if (!call.announced && call.name()) {
    start_call(*call.name());
    call.announced = true;
  }
  if (call.announced) emit_arguments(call.take_arguments());
  if (!call.done()) {
    if (!at_end) return CallProgress::kNeedMore;
    return fail(), CallProgress::kFailed;
  }
  if (!call.name() || (!call.has_arguments() && default_arguments == nullptr)) return fail(), CallProgress::kFailed;
  if (!call.has_arguments()) emit_arguments(default_arguments);
  return CallProgress::kDone;
}

}  // namespace tessera::server
