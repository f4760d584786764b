// Streaming detokenization over any Tokenizer, as vLLM does it: decode a short window of
// ids (prefix_offset..end), compare with the window's already-emitted part
// (prefix_offset..read_offset) and emit only the new text, and only once it does not end in
// an unfinished character (U+FFFD or a truncated UTF-8 sequence) or a byte-fallback run
// that may still continue. Windows start where earlier text was final, so per-token cost
// is O(window) (the last emitted group plus the pending tokens), not O(sequence), and
// leading-space stripping (Metaspace) and skipped special tokens affect the window and its
// prefix alike.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tessera::tokenizer {

class IncrementalDetokenizer {
 public:
  // prompt_ids give context: the first generated token is decoded after up to
  // kPromptContext prompt tokens, so it keeps its leading space.
  static constexpr size_t kPromptContext = 5;

  IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens,
                         std::span<const TokenId> prompt_ids = {});

  // Appends one generated token; returns the text it completes (often "", never half a
  // character). Out-of-range ids are an error and leave the state unchanged.
  Result<std::string> step(TokenId id);

  // Text still held back (an unfinished character at the end of the stream), rendered as
  // decode() renders it. Call once after the last step.
  Result<std::string> finish();

  // Everything emitted so far.
  const std::string& text() const { return text_; }
  size_t num_generated() const { return ids_.size() - num_prompt_; }
  // Ids the next step() decodes besides the new one (the cost of a step).
  size_t window_size() const { return ids_.size() - prefix_offset_; }

 private:
  // Whether id's piece is a <0xXX> byte-fallback piece.
  bool is_byte_piece(TokenId id) const;

  const Tokenizer& tok_;
  bool skip_special_;
  std::vector<TokenId> ids_;  // context prompt ids, then generated ids
  size_t num_prompt_ = 0;
  size_t prefix_offset_ = 0;
  size_t read_offset_ = 0;
  std::string text_;
};

}  // namespace tessera::tokenizer
