// Vocabulary entries shared by the GGUF and SentencePiece tokenizers, and the two ways
// their pieces turn back into text (HF decoder semantics, clean_up_tokenization_spaces off):
//   - Metaspace/SentencePiece: '▁' -> ' ', <0xXX> byte pieces -> bytes, one leading space
//     of the whole text stripped when the model adds a dummy prefix;
//   - ByteLevel (GPT-2): each piece's chars map back to bytes through the GPT-2 byte table.
// Both return valid UTF-8: invalid bytes become U+FFFD per maximal invalid subpart, which
// keeps decode prefix-stable for the incremental detokenizer.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tessera::tokenizer {

// llama.cpp's token types (tokenizer.ggml.token_type), also used for SentencePiece pieces.
enum class TokenAttr : uint8_t { kUndefined, kNormal, kUnknown, kControl, kUserDefined, kUnused, kByte };

struct VocabEntry {
  std::string text;
  float score = 0.0f;
  TokenAttr attr = TokenAttr::kNormal;
};

// Piece text -> id, with lookups by string_view (no temporary strings in the merge loops).
struct PieceHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using PieceMap = std::unordered_map<std::string, TokenId, PieceHash, std::equal_to<>>;

inline std::optional<TokenId> find_piece(const PieceMap& map, std::string_view piece) {
  auto it = map.find(piece);
  if (it == map.end()) return std::nullopt;
  return it->second;
}

// Special in the HF sense: skipped by decode(skip_special_tokens=true).
inline bool is_special_attr(TokenAttr a) { return a == TokenAttr::kControl || a == TokenAttr::kUnknown; }

// "<0x0A>" -> 0x0A; nullopt for anything else.
std::optional<uint8_t> parse_byte_piece(std::string_view piece);

// ids must be in range of vocab (callers check).
std::string decode_metaspace(std::span<const VocabEntry> vocab, std::span<const TokenId> ids,
                             bool skip_special, bool strip_leading_space);
std::string decode_byte_level(std::span<const VocabEntry> vocab, std::span<const TokenId> ids,
                              bool skip_special);

// GPT-2's bytes_to_unicode table: the printable stand-in for each byte, and back.
uint32_t byte_to_unicode(uint8_t b);
std::optional<uint8_t> unicode_to_byte(uint32_t cp);
// Maps every byte of raw to its stand-in character (UTF-8).
std::string byte_level_encode(std::string_view raw);

// An error naming the first id outside [0, vocab_size), or ok.
Status check_ids(std::span<const TokenId> ids, size_t vocab_size);

}  // namespace tessera::tokenizer
