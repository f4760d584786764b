#include "tokenizer/wordpiece.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include "tokenizer/utf8.h"

namespace tessera::tokenizer {

namespace {

bool is_chinese_char(UChar32 c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_control(UChar32 c) {
  switch (u_charType(c)) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_UNASSIGNED:
    case U_PRIVATE_USE_CHAR:
    case U_SURROGATE:
      return true;
    default:
      return false;
  }
}

}  // namespace

WordPiece::WordPiece(const PieceMap& piece_to_id, size_t max_piece_len, std::optional<TokenId> unk_id,
                     bool lowercase, bool strip_accents)
    : piece_to_id_(&piece_to_id),
      max_piece_len_(max_piece_len),
      unk_id_(unk_id),
      lowercase_(lowercase),
      strip_accents_(strip_accents) {}

std::vector<std::string> WordPiece::words(std::string_view text) const {
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  if (strip_accents_) {
    UErrorCode err = U_ZERO_ERROR;
    const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(err);
    if (U_SUCCESS(err)) {
      icu::UnicodeString n = nfd->normalize(u, err);
      if (U_SUCCESS(err)) u = n;
    }
  }
  std::vector<std::string> words(1);
  for (int32_t i = 0; i < u.length(); i = u.moveIndex32(i, 1)) {
    const UChar32 c = u.char32At(i);
    if (u_isUWhiteSpace(c)) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (c == 0 || c == 0xFFFD || is_control(c)) continue;
    if (strip_accents_ && u_charType(c) == U_NON_SPACING_MARK) continue;
    std::string s;
    utf8_append(s, static_cast<uint32_t>(lowercase_ ? u_tolower(c) : c));
    const uint32_t mask = U_GET_GC_MASK(c);
    if ((mask & U_GC_P_MASK) != 0 || (c < 0x7F && (mask & U_GC_S_MASK) != 0) || is_chinese_char(c)) {
      if (!words.back().empty()) words.emplace_back();
      words.back() = std::move(s);
      words.emplace_back();
    } else {
      words.back() += s;
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

void WordPiece::encode(std::string_view text, std::vector<TokenId>& out) const {
  for (const std::string& word : words(text)) {
    const std::string w = "\xE2\x96\x81" + word;
    const size_t start_size = out.size();
    bool failed = false;
    for (size_t i = 0; i < w.size() && !failed;) {
      bool matched = false;
      for (size_t j = std::min(w.size(), i + max_piece_len_); j > i; --j) {
        if (auto id = find_piece(*piece_to_id_, std::string_view(w).substr(i, j - i))) {
          out.push_back(*id);
          i = j;
          matched = true;
          break;
        }
      }
      failed = !matched;
    }
    if (failed) out.resize(start_size);
    if (out.size() == start_size && unk_id_) out.push_back(*unk_id_);
  }
}

}  // namespace tessera::tokenizer
