// Byte-level BPE (GPT-2 style) over pre-tokenized words: each byte of a word starts as the
// token of its GPT-2 stand-in character, then the adjacent pair with the lowest merge rank
// is merged until no ranked pair is left (leftmost first on ties), as HF tokenizers and
// llama.cpp do.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/vocab_common.h"

namespace tessera::tokenizer {

class ByteLevelBpe {
 public:
  // merges[i] = {left, right} has rank i; both sides and their concatenation must be pieces
  // of piece_to_id (which must outlive the result). Errors name the merge.
  static Result<ByteLevelBpe> build(const PieceMap& piece_to_id,
                                    const std::vector<std::pair<std::string, std::string>>& merges);

  // Appends the ids of one pre-tokenized word (raw bytes). With ignore_merges a word that is
  // itself a piece becomes that piece directly (Llama 3's tokenizer.json option).
  void encode_word(std::string_view word, bool ignore_merges, std::vector<TokenId>& out) const;

  size_t num_merges() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;
    TokenId merged;
  };
  static uint64_t key(TokenId l, TokenId r) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
  }

  const PieceMap* piece_to_id_ = nullptr;
  std::unordered_map<uint64_t, Merge> merges_;
  std::array<TokenId, 256> byte_ids_{};  // token of each byte's stand-in character, -1 if none
};

}  // namespace tessera::tokenizer
