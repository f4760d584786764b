// Splits text around special/added tokens before the model sees it, as HF's added-token
// pass does: leftmost match first, the longest token at that position, optional stripping
// of whitespace left/right of a token (llama.cpp's LSTRIP/RSTRIP attributes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tessera::tokenizer {

struct SpecialTokenSpec {
  std::string text;
  TokenId id = 0;
  bool lstrip = false;  // drop whitespace before the token
  bool rstrip = false;  // drop whitespace after it
};

// One fragment of the input: raw text to tokenize (token empty) or a matched token.
struct TextFragment {
  std::string_view text;
  std::optional<TokenId> token;
};

class SpecialTokenMatcher {
 public:
  SpecialTokenMatcher() = default;
  explicit SpecialTokenMatcher(std::vector<SpecialTokenSpec> specs);

  bool empty() const { return specs_.empty(); }
  // Fragments in order; raw fragments are never empty.
  std::vector<TextFragment> split(std::string_view text) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, uint32_t>> children;  // sorted by byte
    int32_t spec_idx = -1;
  };
  // Index into specs_ of the longest token starting at text[pos], or -1.
  int32_t longest_match(std::string_view text, size_t pos, size_t* len) const;

  std::vector<SpecialTokenSpec> specs_;
  std::vector<Node> nodes_;
};

}  // namespace tessera::tokenizer
