// WordPiece for `tokenizer.ggml.model = bert` (llama.cpp's WPM): BERT normalization (NFD,
// drop accents and control characters, lowercase), split on whitespace and around
// punctuation and CJK characters, then greedy longest-match of "▁" + word against the
// vocabulary; a word with no full match becomes [UNK].
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab_common.h"

namespace tessera::tokenizer {

class WordPiece {
 public:
  // piece_to_id must outlive the WordPiece.
  WordPiece(const PieceMap& piece_to_id, size_t max_piece_len, std::optional<TokenId> unk_id,
            bool lowercase, bool strip_accents);

  void encode(std::string_view text, std::vector<TokenId>& out) const;

  // Normalized words (exposed for tests).
  std::vector<std::string> words(std::string_view text) const;

 private:
  const PieceMap* piece_to_id_;
  size_t max_piece_len_;
  std::optional<TokenId> unk_id_;
  bool lowercase_;
  bool strip_accents_;
};

}  // namespace tessera::tokenizer
