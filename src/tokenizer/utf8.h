// UTF-8 helpers shared by the tokenizers and the incremental detokenizer: validation,
// lossy repair (U+FFFD for each maximal invalid subpart, as Rust's from_utf8_lossy and
// Python's errors="replace"), code point iteration and incomplete-tail detection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::tokenizer {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

bool is_valid_utf8(std::string_view s);

// Length of the valid UTF-8 sequence starting at s[pos], 0 when it is invalid or truncated.
size_t utf8_valid_len(std::string_view s, size_t pos);

// Length a sequence with this lead byte claims (1 for ASCII and stray bytes).
inline size_t utf8_lead_len(uint8_t lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// s with every maximal invalid subpart replaced by U+FFFD.
std::string utf8_lossy(std::string_view s);

// Bytes at the end of s that begin a valid but unfinished sequence (0..3); such a tail may
// still become a character when more bytes arrive.
size_t utf8_incomplete_tail(std::string_view s);

// Decodes the valid code point at s[pos] and advances pos; s must be valid UTF-8 there.
uint32_t utf8_next(std::string_view s, size_t& pos);

void utf8_append(std::string& out, uint32_t cp);

}  // namespace tessera::tokenizer
