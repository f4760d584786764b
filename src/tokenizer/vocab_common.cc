#include "tokenizer/vocab_common.h"

#include <array>

#include "tokenizer/utf8.h"

namespace tessera::tokenizer {

namespace {

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581

struct ByteTables {
  std::array<uint32_t, 256> to_unicode{};
  std::array<int16_t, 512> from_unicode{};  // stand-ins are all below U+0200
  ByteTables() {
    from_unicode.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      to_unicode[b] = printable ? static_cast<uint32_t>(b) : next++;
      from_unicode[to_unicode[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteTables& tables() {
  static const ByteTables t;
  return t;
}

void append_replacing_metaspace(std::string& out, std::string_view text) {
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(kMetaspace, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos)).push_back(' ');
    pos = hit + kMetaspace.size();
  }
  out.append(text.substr(pos));
}

}  // namespace

std::optional<uint8_t> parse_byte_piece(std::string_view p) {
  if (p.size() != 6 || p.substr(0, 3) != "<0x" || p[5] != '>') return std::nullopt;
  int v = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = p[i];
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (d < 0) return std::nullopt;
    v = v * 16 + d;
  }
  return static_cast<uint8_t>(v);
}

std::string decode_metaspace(std::span<const VocabEntry> vocab, std::span<const TokenId> ids,
                             bool skip_special, bool strip_leading_space) {
  std::string bytes;
  for (TokenId id : ids) {
    const VocabEntry& e = vocab[static_cast<size_t>(id)];
    if (skip_special && is_special_attr(e.attr)) continue;
    if (e.attr == TokenAttr::kByte) {
      if (auto b = parse_byte_piece(e.text)) {
        bytes.push_back(static_cast<char>(*b));
        continue;
      }
    }
    append_replacing_metaspace(bytes, e.text);
  }
  std::string out = utf8_lossy(bytes);
  if (strip_leading_space && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

std::string decode_byte_level(std::span<const VocabEntry> vocab, std::span<const TokenId> ids,
                              bool skip_special) {
  const ByteTables& t = tables();
  std::string bytes;
  std::string piece_bytes;
  for (TokenId id : ids) {
    const VocabEntry& e = vocab[static_cast<size_t>(id)];
    if (skip_special && is_special_attr(e.attr)) continue;
    if (e.attr == TokenAttr::kByte) {
      if (auto b = parse_byte_piece(e.text)) {
        bytes.push_back(static_cast<char>(*b));
        continue;
      }
    }
    // As HF's ByteLevel decoder: a piece maps back byte by byte only if every char is a
    // stand-in; otherwise (added tokens like "<｜end▁of▁sentence｜>") its UTF-8 is kept.
    piece_bytes.clear();
    bool mapped = is_valid_utf8(e.text);
    size_t pos = 0;
    while (mapped && pos < e.text.size()) {
      const uint32_t cp = utf8_next(e.text, pos);
      if (cp < t.from_unicode.size() && t.from_unicode[cp] >= 0) {
        piece_bytes.push_back(static_cast<char>(t.from_unicode[cp]));
      } else {
        mapped = false;
      }
    }
    bytes.append(mapped ? piece_bytes : e.text);
  }
  return utf8_lossy(bytes);
}

uint32_t byte_to_unicode(uint8_t b) { return tables().to_unicode[b]; }

std::optional<uint8_t> unicode_to_byte(uint32_t cp) {
  const ByteTables& t = tables();
  if (cp >= t.from_unicode.size() || t.from_unicode[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(t.from_unicode[cp]);
}

std::string byte_level_encode(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (char c : raw) utf8_append(out, byte_to_unicode(static_cast<uint8_t>(c)));
  return out;
}

Status check_ids(std::span<const TokenId> ids, size_t vocab_size) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || static_cast<size_t>(ids[i]) >= vocab_size) {
      return Status::error("token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                           " is out of range (vocabulary size " + std::to_string(vocab_size) + ")");
    }
  }
  return Status();
}

}  // namespace tessera::tokenizer
