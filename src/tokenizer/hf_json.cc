#include "tokenizer/hf_json.h"

#include <charconv>
#include <cstring>
#include <limits>

#include "tokenizer/unicode.h"

namespace tessera::tokenizer {
namespace {

constexpr int kMaxDepth = 200;

class Parser {
 public:
  Parser(std::string_view text, TokenizerJson* doc) : begin_(text.data()), p_(text.data()),
      end_(text.data() + text.size()), doc_(doc) {}

  Status parse_document(nlohmann::json* out) {
    skip_ws();
    TESSERA_RETURN_IF_ERROR(parse_value(out, 0, doc_ != nullptr ? Where::kRoot : Where::kOther));
    skip_ws();
    if (p_ != end_) return error("trailing characters after the JSON value");
    return Status();
  }

 private:
  enum class Where { kRoot, kModel, kOther };

  Status error(const std::string& what) const {
    return Status::error("invalid JSON at byte " + std::to_string(p_ - begin_) + ": " + what);
  }

  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool consume(char c) {
    skip_ws();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  Status parse_hex4(uint32_t* v) {
    if (end_ - p_ < 4) return error("truncated \\u escape");
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = hex_value(p_[i]);
      if (h < 0) return error("bad \\u escape");
      r = (r << 4) | static_cast<uint32_t>(h);
    }
    p_ += 4;
    *v = r;
    return Status();
  }

  // Appends the string's bytes to out; p_ is just past the opening quote.
  Status parse_string_body(std::string* out) {
    while (true) {
      const char* start = p_;
      while (p_ < end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20) ++p_;
      out->append(start, static_cast<size_t>(p_ - start));
      if (p_ >= end_) return error("unterminated string");
      const char c = *p_;
      if (c == '"') {
        ++p_;
        return Status();
      }
      if (c != '\\') return error("control character in string");
      ++p_;
      if (p_ >= end_) return error("unterminated escape");
      const char e = *p_++;
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t cp = 0;
          TESSERA_RETURN_IF_ERROR(parse_hex4(&cp));
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return error("lone surrogate");
            p_ += 2;
            uint32_t lo = 0;
            TESSERA_RETURN_IF_ERROR(parse_hex4(&lo));
            if (lo < 0xDC00 || lo > 0xDFFF) return error("lone surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return error("lone surrogate");
          }
          unicode::append_utf8(cp, out);
          break;
        }
        default: return error("bad escape");
      }
    }
  }

  Status parse_string(std::string* out) {
    skip_ws();
    if (p_ >= end_ || *p_ != '"') return error("expected a string");
    ++p_;
    return parse_string_body(out);
  }

  Status parse_number(nlohmann::json* out) {
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ >= end_ || !(*p_ >= '0' && *p_ <= '9')) return error("bad number");
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    bool is_float = false;
    if (p_ < end_ && *p_ == '.') {
      is_float = true;
      ++p_;
      if (p_ >= end_ || !(*p_ >= '0' && *p_ <= '9')) return error("bad number");
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      is_float = true;
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ >= end_ || !(*p_ >= '0' && *p_ <= '9')) return error("bad number");
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (!is_float) {
      int64_t v = 0;
      auto r = std::from_chars(start, p_, v);
      if (r.ec == std::errc() && r.ptr == p_) {
        *out = v;
        return Status();
      }
      uint64_t u = 0;
      r = std::from_chars(start, p_, u);
      if (r.ec == std::errc() && r.ptr == p_) {
        *out = u;
        return Status();
      }
    }
    double d = 0;
    auto r = std::from_chars(start, p_, d);
    if (r.ptr != p_) return error("bad number");
    *out = d;  // out-of-range values saturate, as serde_json does for f64
    return Status();
  }

  Status parse_literal(const char* word, nlohmann::json value, nlohmann::json* out) {
    const size_t n = std::strlen(word);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) {
      return error("unexpected character");
    }
    p_ += n;
    *out = std::move(value);
    return Status();
  }

  Status parse_value(nlohmann::json* out, int depth, Where where) {
    if (depth > kMaxDepth) return error("nesting deeper than " + std::to_string(kMaxDepth));
    skip_ws();
    if (p_ >= end_) return error("unexpected end of input");
    switch (*p_) {
      case '{': return parse_object(out, depth, where);
      case '[': return parse_array(out, depth);
      case '"': {
        std::string s;
        ++p_;
        TESSERA_RETURN_IF_ERROR(parse_string_body(&s));
        *out = std::move(s);
        return Status();
      }
      case 't': return parse_literal("true", true, out);
      case 'f': return parse_literal("false", false, out);
      case 'n': return parse_literal("null", nullptr, out);
      default: return parse_number(out);
    }
  }

  Status parse_array(nlohmann::json* out, int depth) {
    ++p_;  // '['
    *out = nlohmann::json::array();
    if (consume(']')) return Status();
    while (true) {
      nlohmann::json v;
      TESSERA_RETURN_IF_ERROR(parse_value(&v, depth + 1, Where::kOther));
      out->push_back(std::move(v));
      if (consume(',')) continue;
      if (consume(']')) return Status();
      return error("expected ',' or ']' in array");
    }
  }

  Status parse_object(nlohmann::json* out, int depth, Where where) {
    ++p_;  // '{'
    *out = nlohmann::json::object();
    if (consume('}')) return Status();
    std::string key;
    while (true) {
      key.clear();
      TESSERA_RETURN_IF_ERROR(parse_string(&key));
      if (!consume(':')) return error("expected ':' after an object key");
      skip_ws();
      if (where == Where::kModel && key == "vocab" && p_ < end_ && *p_ == '{') {
        TESSERA_RETURN_IF_ERROR(parse_vocab());
        out->erase("vocab");
      } else if (where == Where::kModel && key == "merges" && p_ < end_ && *p_ == '[') {
        TESSERA_RETURN_IF_ERROR(parse_merges());
        out->erase("merges");
      } else {
        const Where child =
            where == Where::kRoot && key == "model" ? Where::kModel : Where::kOther;
        nlohmann::json v;
        TESSERA_RETURN_IF_ERROR(parse_value(&v, depth + 1, child));
        (*out)[key] = std::move(v);  // a repeated key keeps the last value, as serde does
      }
      if (consume(',')) continue;
      if (consume('}')) return Status();
      return error("expected ',' or '}' in object");
    }
  }

  Status pool_string(TokenizerJson::Span* span) {
    skip_ws();
    if (p_ >= end_ || *p_ != '"') return error("expected a string");
    ++p_;
    const size_t offset = doc_->pool.size();
    TESSERA_RETURN_IF_ERROR(parse_string_body(&doc_->pool));
    *span = {static_cast<uint32_t>(offset), static_cast<uint32_t>(doc_->pool.size() - offset)};
    return Status();
  }

  Status parse_vocab() {
    ++p_;  // '{'
    doc_->has_vocab = true;
    doc_->vocab.clear();
    if (consume('}')) return Status();
    while (true) {
      TokenizerJson::VocabEntry e{};
      TESSERA_RETURN_IF_ERROR(pool_string(&e.token));
      if (!consume(':')) return error("expected ':' in model.vocab");
      skip_ws();
      nlohmann::json v;
      if (p_ >= end_ || !((*p_ >= '0' && *p_ <= '9') || *p_ == '-')) {
        return error("model.vocab values must be integer ids");
      }
      TESSERA_RETURN_IF_ERROR(parse_number(&v));
      if (!v.is_number_integer()) return error("model.vocab values must be integer ids");
      if (v.is_number_unsigned()) {
        e.id = v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                   ? -1
                   : static_cast<int64_t>(v.get<uint64_t>());
      } else {
        e.id = v.get<int64_t>();
      }
      if (e.id < 0 && !v.is_number_unsigned()) return error("negative id in model.vocab");
      if (e.id < 0) return error("id too large in model.vocab");
      doc_->vocab.push_back(e);
      if (consume(',')) continue;
      if (consume('}')) return Status();
      return error("expected ',' or '}' in model.vocab");
    }
  }

  Status parse_merges() {
    ++p_;  // '['
    doc_->has_merges = true;
    doc_->merges.clear();
    if (consume(']')) return Status();
    int form = 0;  // 1: "a b" strings, 2: [a, b] pairs; mixing them is an error, as in HF
    size_t index = 0;
    while (true) {
      skip_ws();
      if (p_ >= end_) return error("unexpected end of input in model.merges");
      TokenizerJson::Merge m{};
      if (*p_ == '"') {
        if (form == 2) return error("model.merges mixes strings and pairs");
        form = 1;
        TokenizerJson::Span whole{};
        TESSERA_RETURN_IF_ERROR(pool_string(&whole));
        const std::string_view s = doc_->str(whole);
        if (s.rfind("#version", 0) == 0) {
          doc_->pool.resize(whole.offset);
        } else {
          const size_t sp = s.find(' ');
          if (sp == std::string_view::npos || s.find(' ', sp + 1) != std::string_view::npos) {
            return error("model.merges entry " + std::to_string(index) +
                         " is not two tokens separated by one space");
          }
          m.left = {whole.offset, static_cast<uint32_t>(sp)};
          m.right = {static_cast<uint32_t>(whole.offset + sp + 1),
                     static_cast<uint32_t>(s.size() - sp - 1)};
          doc_->merges.push_back(m);
        }
      } else if (*p_ == '[') {
        if (form == 1) return error("model.merges mixes strings and pairs");
        form = 2;
        ++p_;
        TESSERA_RETURN_IF_ERROR(pool_string(&m.left));
        if (!consume(',')) return error("model.merges pairs need two strings");
        TESSERA_RETURN_IF_ERROR(pool_string(&m.right));
        if (!consume(']')) return error("model.merges pairs need exactly two strings");
        doc_->merges.push_back(m);
      } else {
        return error("model.merges entries must be strings or pairs of strings");
      }
      ++index;
      if (consume(',')) continue;
      if (consume(']')) return Status();
      return error("expected ',' or ']' in model.merges");
    }
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  TokenizerJson* doc_;  // null when parsing plain JSON
};

}  // namespace

Result<TokenizerJson> parse_tokenizer_json(std::string_view text) {
  if (text.size() >= (1ull << 31)) return Status::error("file too large (2 GiB or more)");
  const size_t valid = unicode::valid_utf8_prefix(text);
  if (valid != text.size()) {
    return Status::error("invalid UTF-8 at byte " + std::to_string(valid));
  }
  TokenizerJson doc;
  Parser parser(text, &doc);
  TESSERA_RETURN_IF_ERROR(parser.parse_document(&doc.root));
  if (!doc.root.is_object()) return Status::error("the top level is not a JSON object");
  return doc;
}

Result<nlohmann::json> parse_json(std::string_view text) {
  const size_t valid = unicode::valid_utf8_prefix(text);
  if (valid != text.size()) {
    return Status::error("invalid UTF-8 at byte " + std::to_string(valid));
  }
  nlohmann::json root;
  Parser parser(text, nullptr);
  TESSERA_RETURN_IF_ERROR(parser.parse_document(&root));
  return root;
}

}  // namespace tessera::tokenizer
