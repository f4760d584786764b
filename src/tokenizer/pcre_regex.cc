#include "tokenizer/pcre_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cstdio>

#include "tokenizer/unicode.h"

namespace tessera::tokenizer {
namespace {

constexpr const char* kWordSet = "\\p{L}\\p{M}\\p{N}\\p{Pc}";  // Oniguruma's Unicode \w
constexpr size_t kJitStackMax = 8u << 20;

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

// Per-thread match state: match data and a JIT stack big enough for long inputs.
struct MatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  MatchState() {
    data = pcre2_match_data_create(1, nullptr);  // only the whole match is needed
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(64u << 10, kJitStackMax, nullptr);
    if (context != nullptr && jit_stack != nullptr) {
      pcre2_jit_stack_assign(context, nullptr, jit_stack);
    }
    // Bounds for the interpreter fallback, so a hostile pattern fails instead of hanging.
    if (context != nullptr) {
      pcre2_set_match_limit(context, 50'000'000);
      pcre2_set_heap_limit(context, 256u << 10);  // KiB
    }
  }
  ~MatchState() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
  }
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

std::string pcre_error(int code) {
  PCRE2_UCHAR buf[256];
  const int n = pcre2_get_error_message(code, buf, sizeof(buf));
  return n > 0 ? std::string(reinterpret_cast<const char*>(buf), static_cast<size_t>(n))
               : "error " + std::to_string(code);
}

}  // namespace

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

std::string Regex::translate(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  bool in_class = false;
  size_t i = 0;
  while (i < p.size()) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      switch (e) {
        case 's': out += "\\p{White_Space}"; i += 2; continue;
        case 'S': out += "\\P{White_Space}"; i += 2; continue;
        case 'w':
          out += in_class ? std::string(kWordSet) : "[" + std::string(kWordSet) + "]";
          i += 2;
          continue;
        case 'W':
          // Inside a class there is no way to spell the complement of a union; PCRE2's \W
          // differs from Oniguruma's only on marks and connector punctuation.
          out += in_class ? std::string("\\W") : "[^" + std::string(kWordSet) + "]";
          i += 2;
          continue;
        case 'h': out += in_class ? "0-9a-fA-F" : "[0-9a-fA-F]"; i += 2; continue;
        case 'H': out += in_class ? "\\x00-/:-@G-`g-\\x{10FFFF}" : "[^0-9a-fA-F]"; i += 2; continue;
        case 'u':
          if (i + 6 <= p.size() && is_hex(p[i + 2]) && is_hex(p[i + 3]) &&
              is_hex(p[i + 4]) && is_hex(p[i + 5])) {
            out += "\\x{";
            out.append(p.substr(i + 2, 4));
            out += "}";
            i += 6;
            continue;
          }
          break;
        default: break;
      }
      // Any other escape is copied whole (the escaped char may be multi-byte).
      const size_t len = 1 + unicode::utf8_len(static_cast<unsigned char>(e));
      out.append(p.substr(i, std::min(len, p.size() - i)));
      i += len;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      ++i;
      if (i < p.size() && p[i] == '^') out.push_back(p[i++]);
      if (i < p.size() && p[i] == ']') out.push_back(p[i++]);  // a leading ] is literal
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
      const size_t close = p.find(":]", i + 2);
      if (close != std::string_view::npos) {
        out.append(p.substr(i, close + 2 - i));
        i = close + 2;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out.push_back(c);
    ++i;
  }
  return out;
}

Result<std::unique_ptr<Regex>> Regex::compile(std::string_view pattern) {
  if (!unicode::is_valid_utf8(pattern)) return Status::error("regex pattern is not valid UTF-8");
  const std::string translated = translate(pattern);
  pcre2_compile_context* cctx = pcre2_compile_context_create(nullptr);
  if (cctx == nullptr) return Status::error("out of memory compiling a regex");
  pcre2_set_newline(cctx, PCRE2_NEWLINE_LF);
  pcre2_set_max_pattern_length(cctx, 1u << 20);
  int err = 0;
  PCRE2_SIZE err_off = 0;
  // Oniguruma's ^ and $ are line anchors by default.
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()),
                                   translated.size(), PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE,
                                   &err, &err_off, cctx);
  pcre2_compile_context_free(cctx);
  if (code == nullptr) {
    return Status::error("bad regex '" + std::string(pattern) + "': " + pcre_error(err) +
                         " at offset " + std::to_string(err_off));
  }
  std::unique_ptr<Regex> re(new Regex());
  re->pattern_ = std::string(pattern);
  re->code_ = code;
  re->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return re;
}

Result<std::unique_ptr<Regex>> Regex::compile_literal(std::string_view literal) {
  std::string escaped;
  for (size_t i = 0; i < literal.size();) {
    const unsigned char c = static_cast<unsigned char>(literal[i]);
    const size_t len = std::min(unicode::utf8_len(c), literal.size() - i);
    if (c < 0x80 && !((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))) {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "\\x{%x}", c);
      escaped += buf;  // hex escapes keep every ASCII metachar (and space, #) literal
    } else {
      escaped.append(literal.substr(i, len));
    }
    i += len;
  }
  auto re = compile(escaped);
  if (re.ok()) (*re)->pattern_ = std::string(literal);
  return re;
}

size_t Regex::next_char_len(std::string_view text, size_t pos) {
  if (pos >= text.size()) return 1;
  return unicode::utf8_len(static_cast<unsigned char>(text[pos]));
}

Status Regex::search(std::string_view text, size_t start, size_t* ms, size_t* me,
                     bool* found) const {
  MatchState& st = match_state();
  if (st.data == nullptr || st.context == nullptr) return Status::error("out of memory in regex");
  auto* code = static_cast<pcre2_code*>(code_);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc;
  if (jit_) {
    rc = pcre2_jit_match(code, subject, text.size(), start, 0, st.data, st.context);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      rc = pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                       st.data, st.context);
    }
  } else {
    rc = pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, st.data, st.context);
  }
  if (rc == PCRE2_ERROR_NOMATCH) {
    *found = false;
    return Status();
  }
  if (rc < 0) return Status::error("regex '" + pattern_ + "' failed: " + pcre_error(rc));
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
  *ms = ov[0];
  *me = ov[1];
  // \K can put the start after the end; treat such a match as empty at its end.
  if (*ms > *me) *ms = *me;
  *found = true;
  return Status();
}

Status Regex::find_matches(std::string_view text, std::vector<MatchSpan>* out) const {
  out->clear();
  if (text.empty()) {
    out->push_back({0, 0, false});
    return Status();
  }
  size_t prev = 0;
  TESSERA_RETURN_IF_ERROR(for_each_match(text, [&](size_t s, size_t e) {
    if (s > prev) out->push_back({prev, s, false});
    out->push_back({s, e, true});
    prev = e;
  }));
  if (prev < text.size()) out->push_back({prev, text.size(), false});
  return Status();
}

}  // namespace tessera::tokenizer

namespace tessera::tokenizer {

Result<Pattern> Pattern::literal(std::string text) {
  Pattern p;
  if (text.empty()) {
    // The escaped empty pattern matches the empty string everywhere, as in HF.
    auto re = Regex::compile_literal(text);
    if (!re.ok()) return re.status();
    p.regex_ = std::move(*re);
  }
  p.literal_ = std::move(text);
  return p;
}

Result<Pattern> Pattern::regex(std::string_view onig_pattern) {
  auto re = Regex::compile(onig_pattern);
  if (!re.ok()) return re.status();
  Pattern p;
  p.regex_ = std::move(*re);
  return p;
}

Status Pattern::find_matches(std::string_view text, std::vector<MatchSpan>* out) const {
  if (regex_ != nullptr) return regex_->find_matches(text, out);
  out->clear();
  if (text.empty()) {
    out->push_back({0, 0, false});
    return Status();
  }
  size_t prev = 0;
  for (size_t pos = text.find(literal_); pos != std::string_view::npos;
       pos = text.find(literal_, pos + literal_.size())) {
    if (pos > prev) out->push_back({prev, pos, false});
    out->push_back({pos, pos + literal_.size(), true});
    prev = pos + literal_.size();
  }
  if (prev < text.size()) out->push_back({prev, text.size(), false});
  return Status();
}

}  // namespace tessera::tokenizer
