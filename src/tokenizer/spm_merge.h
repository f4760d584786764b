// llama.cpp's SentencePiece (BPE-style) tokenization for `tokenizer.ggml.model = llama`:
// start from the UTF-8 characters of the ▁-escaped text and repeatedly merge the adjacent
// pair whose concatenation is a vocabulary piece with the highest score (leftmost first on
// ties). Characters that never become a piece fall back to <0xXX> byte tokens.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "tokenizer/vocab_common.h"

namespace tessera::tokenizer {

class SpmMerger {
 public:
  // vocab and piece_to_id must outlive the merger.
  SpmMerger(std::span<const VocabEntry> vocab, const PieceMap& piece_to_id, std::optional<TokenId> unk_id);

  // Appends the ids of `text`, whose spaces are already replaced by ▁.
  void encode(std::string_view text, std::vector<TokenId>& out) const;

 private:
  void emit_bytes(std::string_view piece, std::vector<TokenId>& out) const;

  std::span<const VocabEntry> vocab_;
  const PieceMap* piece_to_id_;
  std::optional<TokenId> unk_id_;
  std::array<TokenId, 256> byte_ids_{};  // <0xXX> piece (else the 1-byte piece) per byte, -1 if none
};

}  // namespace tessera::tokenizer
