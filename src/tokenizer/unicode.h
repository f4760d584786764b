// UTF-8 and Unicode helpers for the tokenizers: decoding, validation, normalization and the
// character classes HF `tokenizers` (Rust) uses. Character data comes from ICU (72: Unicode
// 15.0). Normalization follows HF, whose tables are Unicode 9.0: characters assigned later
// pass through it untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tessera::tokenizer::unicode {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Length of a valid UTF-8 prefix of s (== s.size() when all of s is valid).
size_t valid_utf8_prefix(std::string_view s);
inline bool is_valid_utf8(std::string_view s) { return valid_utf8_prefix(s) == s.size(); }

// Decodes the code point at s[*pos] (which must be valid UTF-8) and advances *pos.
inline char32_t decode_utf8(std::string_view s, size_t* pos) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + *pos;
  const unsigned char c = p[0];
  if (c < 0x80) {
    *pos += 1;
    return c;
  }
  if (c < 0xE0) {
    *pos += 2;
    return (char32_t(c & 0x1F) << 6) | (p[1] & 0x3F);
  }
  if (c < 0xF0) {
    *pos += 3;
    return (char32_t(c & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
  }
  *pos += 4;
  return (char32_t(c & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) |
         (char32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
}

// Byte length of the UTF-8 sequence that starts with lead byte c (valid input assumed).
inline size_t utf8_len(unsigned char c) { return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

void append_utf8(char32_t cp, std::string* out);

// Rust's String::from_utf8_lossy: each maximal invalid subpart becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };
// Normalizes valid UTF-8 in place.
Status normalize(NormalForm form, std::string* s);

// Rust char predicates (std + the crates HF uses).
bool is_whitespace(char32_t c);     // White_Space property (char::is_whitespace)
bool is_alphanumeric(char32_t c);   // Alphabetic or Nd/Nl/No (char::is_alphanumeric)
bool is_numeric(char32_t c);        // Nd/Nl/No (char::is_numeric)
bool is_punctuation(char32_t c);    // P* categories (unicode_categories::is_punctuation)
bool is_combining_mark(char32_t c); // Mn/Mc/Me
bool is_control(char32_t c);        // Cc/Cf/Cn/Co (BertNormalizer's notion)
bool is_word_char(char32_t c);      // regex crate \w: Alphabetic, M, Nd, Pc, Join_Control
bool is_chinese_char(char32_t c);   // the CJK blocks BertNormalizer pads with spaces
// Full lowercase mapping of one code point (char::to_lowercase), appended to out.
void append_lowercase(char32_t c, std::string* out);

}  // namespace tessera::tokenizer::unicode
