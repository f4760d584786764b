#include "tokenizer/unicode.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/ustring.h>

#include <cstring>
#include <vector>

namespace tessera::tokenizer::unicode {
namespace {

// Length of the maximal well-formed prefix of a sequence starting at p (Unicode Table 3-7),
// and whether it is complete. Returns 0 for a byte that cannot start a sequence.
size_t scan_sequence(const unsigned char* p, size_t avail, bool* complete) {
  const unsigned char c = p[0];
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c < 0x80) {
    *complete = true;
    return 1;
  } else if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    *complete = false;
    return 0;
  }
  size_t i = 1;
  for (; i < need && i < avail; ++i) {
    const unsigned char b = p[i];
    const bool ok = i == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
  }
  *complete = i == need;
  return i;
}

const icu::Normalizer2* normalizer_for(NormalForm form, UErrorCode* err) {
  switch (form) {
    case NormalForm::kNfc: return icu::Normalizer2::getNFCInstance(*err);
    case NormalForm::kNfd: return icu::Normalizer2::getNFDInstance(*err);
    case NormalForm::kNfkc: return icu::Normalizer2::getNFKCInstance(*err);
    case NormalForm::kNfkd: return icu::Normalizer2::getNFKDInstance(*err);
  }
  return nullptr;
}

// HF tokenizers normalizes with Unicode 9.0 data (the unicode-normalization-alignments
// crate): a character assigned later is, for it, an inert starter that neither decomposes,
// composes nor reorders. These are the later characters for which ICU would do otherwise.
struct LateNormalizationChars {
  std::vector<bool> bits = std::vector<bool>(0x110000, false);
  LateNormalizationChars() {
    const UProperty kChecks[] = {UCHAR_NFD_QUICK_CHECK, UCHAR_NFKD_QUICK_CHECK,
                                 UCHAR_NFC_QUICK_CHECK, UCHAR_NFKC_QUICK_CHECK};
    for (UChar32 c = 0x80; c < 0x110000; ++c) {
      UVersionInfo age;
      u_charAge(c, age);
      if (age[0] < 9 || (age[0] == 9 && age[1] == 0)) continue;
      bool inert = u_getCombiningClass(c) == 0;
      for (UProperty p : kChecks) inert = inert && u_getIntPropertyValue(c, p) == UNORM_YES;
      if (!inert) bits[static_cast<size_t>(c)] = true;
    }
  }
};

const LateNormalizationChars& late_chars() {
  static const LateNormalizationChars chars;
  return chars;
}

Status icu_normalize(const icu::Normalizer2* n, std::string_view in, std::string* out) {
  UErrorCode err = U_ZERO_ERROR;
  icu::StringByteSink<std::string> sink(out);
  n->normalizeUTF8(0, icu::StringPiece(in.data(), static_cast<int32_t>(in.size())), sink,
                   nullptr, err);
  if (U_FAILURE(err)) {
    return Status::error(std::string("unicode normalization failed: ") + u_errorName(err));
  }
  return Status();
}

bool is_ascii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

}  // namespace

size_t valid_utf8_prefix(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    // Eight ASCII bytes at a time: the common case for prose and code.
    if (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    bool complete = false;
    const size_t len = scan_sequence(p + i, n - i, &complete);
    if (!complete) return i;
    i += len;
  }
  return n;
}

void append_utf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    bool complete = false;
    const size_t len = scan_sequence(p + i, n - i, &complete);
    if (complete) {
      out.append(bytes.data() + i, len);
      i += len;
    } else {
      append_utf8(kReplacementChar, &out);
      i += len == 0 ? 1 : len;
    }
  }
  return out;
}

Status normalize(NormalForm form, std::string* s) {
  if (is_ascii(*s)) return Status();  // ASCII is invariant under all four forms
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* n = normalizer_for(form, &err);
  if (U_FAILURE(err) || n == nullptr) return Status::error("ICU normalizer unavailable");
  // Cut the text around characters HF treats as inert; ICU normalizes the pieces between.
  const LateNormalizationChars& late = late_chars();
  std::string out;
  out.reserve(s->size() + s->size() / 4);
  size_t piece = 0, pos = 0;
  bool cut = false;
  while (pos < s->size()) {
    const size_t start = pos;
    const char32_t c = decode_utf8(*s, &pos);
    if (c < 0x80 || !late.bits[c]) continue;
    cut = true;
    TESSERA_RETURN_IF_ERROR(icu_normalize(n, std::string_view(*s).substr(piece, start - piece), &out));
    out.append(*s, start, pos - start);
    piece = pos;
  }
  if (!cut) {
    if (n->isNormalizedUTF8(*s, err) && U_SUCCESS(err)) return Status();
    out.clear();
  }
  TESSERA_RETURN_IF_ERROR(icu_normalize(n, std::string_view(*s).substr(piece), &out));
  *s = std::move(out);
  return Status();
}

bool is_whitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE);
}

bool is_numeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const int8_t t = u_charType(static_cast<UChar32>(c));
  return t == U_DECIMAL_DIGIT_NUMBER || t == U_LETTER_NUMBER || t == U_OTHER_NUMBER;
}

bool is_alphanumeric(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_ALPHABETIC) || is_numeric(c);
}

bool is_punctuation(char32_t c) {
  const int8_t t = u_charType(static_cast<UChar32>(c));
  return t == U_CONNECTOR_PUNCTUATION || t == U_DASH_PUNCTUATION || t == U_START_PUNCTUATION ||
         t == U_END_PUNCTUATION || t == U_INITIAL_PUNCTUATION || t == U_FINAL_PUNCTUATION ||
         t == U_OTHER_PUNCTUATION;
}

bool is_combining_mark(char32_t c) {
  const int8_t t = u_charType(static_cast<UChar32>(c));
  return t == U_NON_SPACING_MARK || t == U_COMBINING_SPACING_MARK || t == U_ENCLOSING_MARK;
}

bool is_control(char32_t c) {
  // BertNormalizer: \t \n \r count as whitespace, not control.
  if (c == '\t' || c == '\n' || c == '\r') return false;
  const int8_t t = u_charType(static_cast<UChar32>(c));
  return t == U_CONTROL_CHAR || t == U_FORMAT_CHAR || t == U_UNASSIGNED || t == U_PRIVATE_USE_CHAR;
}

bool is_word_char(char32_t c) {
  if (c < 0x80) return c == '_' || is_alphanumeric(c);
  const auto u = static_cast<UChar32>(c);
  const int8_t t = u_charType(u);
  return u_hasBinaryProperty(u, UCHAR_ALPHABETIC) || t == U_NON_SPACING_MARK ||
         t == U_COMBINING_SPACING_MARK || t == U_ENCLOSING_MARK || t == U_DECIMAL_DIGIT_NUMBER ||
         t == U_CONNECTOR_PUNCTUATION || u_hasBinaryProperty(u, UCHAR_JOIN_CONTROL);
}

bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

void append_lowercase(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
    return;
  }
  UChar src[2];
  int32_t src_len = 0;
  UBool unused = false;
  U16_APPEND(src, src_len, 2, static_cast<UChar32>(c), unused);
  (void)unused;
  UChar dst[8];
  UErrorCode err = U_ZERO_ERROR;
  const int32_t n = u_strToLower(dst, 8, src, src_len, "", &err);
  if (U_FAILURE(err) || n > 8) {
    append_utf8(c, out);
    return;
  }
  for (int32_t i = 0; i < n;) {
    UChar32 cp;
    U16_NEXT(dst, i, n, cp);
    append_utf8(static_cast<char32_t>(cp), out);
  }
}

}  // namespace tessera::tokenizer::unicode
