// Regex pre-tokenization as llama.cpp does it for byte-level BPE vocabularies: a list of
// PCRE2 patterns (UTF + UCP, JIT) applied in turn; each pattern splits every piece left by
// the previous one into its matches and the gaps between them (gaps are kept as pieces).
// Patterns see one piece at a time, so lookaheads and `$` stop at the piece's end.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tessera::tokenizer {

class RegexSplitter {
 public:
  // `\s`/`\S` in the patterns mean Unicode White_Space (as in HF tokenizers' Oniguruma), not
  // PCRE2's narrower UCP space class.
  static Result<RegexSplitter> compile(const std::vector<std::string>& patterns);

  // Pieces of text (views into it), in order; their concatenation is text.
  Result<std::vector<std::string_view>> split(std::string_view text) const;

  size_t num_patterns() const { return codes_.size(); }

 private:
  struct Code;
  std::vector<std::shared_ptr<const Code>> codes_;
};

// The patterns llama.cpp uses for a `tokenizer.ggml.pre` name; an error for names it does
// not know.
Result<std::vector<std::string>> pre_tokenizer_patterns(std::string_view pre);

// Rewrites `\s` and `\S` as explicit White_Space classes (see compile()).
std::string expand_whitespace_classes(std::string_view pattern);

}  // namespace tessera::tokenizer
