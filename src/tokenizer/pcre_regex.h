// Regexes for tokenizer.json patterns, written for Oniguruma (what HF `tokenizers` uses),
// run on PCRE2 with UTF + UCP and JIT. A few escapes whose meaning differs between the two
// (\s, \w, \h, \uHHHH) are rewritten to their Oniguruma meaning before compiling.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace tessera::tokenizer {

// [start, end) byte offsets plus whether the span is a match (false: the text between).
struct MatchSpan {
  size_t start;
  size_t end;
  bool is_match;
};

class Regex {
 public:
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Compiles an Oniguruma-syntax pattern. The error names the pattern and PCRE2's complaint.
  static Result<std::unique_ptr<Regex>> compile(std::string_view pattern);
  // A pattern that matches `literal` exactly (HF's String patterns, escaped).
  static Result<std::unique_ptr<Regex>> compile_literal(std::string_view literal);

  // Oniguruma's pattern rewritten for PCRE2 (exposed for tests).
  static std::string translate(std::string_view onig_pattern);

  // HF `Pattern::find_matches` on a &SysRegex: the spans cover all of text in order; the
  // empty-match rules are those of the onig crate's find_iter. text must be valid UTF-8.
  // An empty text gives one empty non-match span.
  Status find_matches(std::string_view text, std::vector<MatchSpan>* out) const;

  // Calls on_match(start, end) for each match of the onig-style find_iter. Returns an error
  // only when the regex engine fails (e.g. its resource limits on hostile patterns).
  template <typename F>
  Status for_each_match(std::string_view text, F&& on_match) const {
    size_t last_end = 0;
    bool have_last = false;
    size_t last_match_end = 0;
    while (last_end <= text.size()) {
      size_t s = 0, e = 0;
      bool found = false;
      TESSERA_RETURN_IF_ERROR(search(text, last_end, &s, &e, &found));
      if (!found) break;
      if (e == s && have_last && last_match_end == e) {
        last_end += next_char_len(text, last_end);  // no infinite loop on empty matches
        continue;
      }
      last_end = e;
      have_last = true;
      last_match_end = e;
      on_match(s, e);
    }
    return Status();
  }

  const std::string& pattern() const { return pattern_; }

 private:
  Regex() = default;
  Status search(std::string_view text, size_t start, size_t* ms, size_t* me, bool* found) const;
  static size_t next_char_len(std::string_view text, size_t pos);

  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
};

// HF's SplitPattern / ReplacePattern: a literal string (matched as the escaped regex) or an
// Oniguruma regex.
class Pattern {
 public:
  Pattern() = default;
  static Result<Pattern> literal(std::string text);
  static Result<Pattern> regex(std::string_view onig_pattern);

  // As Regex::find_matches; a non-empty literal is found without the regex engine.
  Status find_matches(std::string_view text, std::vector<MatchSpan>* out) const;

 private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;  // null for a non-empty literal
};

}  // namespace tessera::tokenizer
