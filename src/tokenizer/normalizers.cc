#include "tokenizer/normalizers.h"

#include <vector>

#include "tokenizer/json_fields.h"
#include "tokenizer/pcre_regex.h"
#include "tokenizer/unicode.h"

namespace tessera::tokenizer {
namespace {

namespace jf = json_fields;

// Rebuilds s from its code points through fn(cp, &out).
template <typename F>
void map_chars(std::string* s, F&& fn) {
  std::string out;
  out.reserve(s->size());
  size_t pos = 0;
  while (pos < s->size()) fn(unicode::decode_utf8(*s, &pos), &out);
  *s = std::move(out);
}

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(unicode::NormalForm form) : form_(form) {}
  Status normalize(std::string* s) const override { return unicode::normalize(form_, s); }

 private:
  unicode::NormalForm form_;
};

class Lowercase final : public Normalizer {
 public:
  Status normalize(std::string* s) const override {
    map_chars(s, [](char32_t c, std::string* out) { unicode::append_lowercase(c, out); });
    return Status();
  }
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prepend) : prepend_(std::move(prepend)) {}
  Status normalize(std::string* s) const override {
    if (!s->empty()) s->insert(0, prepend_);
    return Status();
  }

 private:
  std::string prepend_;
};

class Replace final : public Normalizer {
 public:
  Replace(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  Status normalize(std::string* s) const override {
    std::vector<MatchSpan> spans;
    TESSERA_RETURN_IF_ERROR(pattern_.find_matches(*s, &spans));
    std::string out;
    out.reserve(s->size());
    for (const MatchSpan& m : spans) {
      if (m.is_match) {
        out += content_;
      } else {
        out.append(*s, m.start, m.end - m.start);
      }
    }
    *s = std::move(out);
    return Status();
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  Status normalize(std::string* s) const override {
    size_t begin = 0, end = s->size();
    if (left_) {
      while (begin < end) {
        size_t pos = begin;
        if (!unicode::is_whitespace(unicode::decode_utf8(*s, &pos))) break;
        begin = pos;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>((*s)[start]) & 0xC0) == 0x80) --start;
        size_t pos = start;
        if (!unicode::is_whitespace(unicode::decode_utf8(*s, &pos))) break;
        end = start;
      }
    }
    *s = s->substr(begin, end - begin);
    return Status();
  }

 private:
  bool left_, right_;
};

Status strip_accents(std::string* s) {
  TESSERA_RETURN_IF_ERROR(unicode::normalize(unicode::NormalForm::kNfd, s));
  map_chars(s, [](char32_t c, std::string* out) {
    if (!unicode::is_combining_mark(c)) unicode::append_utf8(c, out);
  });
  return Status();
}

class StripAccents final : public Normalizer {
 public:
  Status normalize(std::string* s) const override {
    map_chars(s, [](char32_t c, std::string* out) {
      if (!unicode::is_combining_mark(c)) unicode::append_utf8(c, out);
    });
    return Status();
  }
};

class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese, bool strip_accents, bool lowercase)
      : clean_text_(clean_text), chinese_(chinese), strip_accents_(strip_accents),
        lowercase_(lowercase) {}
  Status normalize(std::string* s) const override {
    if (clean_text_) {
      map_chars(s, [](char32_t c, std::string* out) {
        if (c == 0 || c == 0xFFFD || unicode::is_control(c)) return;
        const bool ws = c == '\t' || c == '\n' || c == '\r' || unicode::is_whitespace(c);
        unicode::append_utf8(ws ? U' ' : c, out);
      });
    }
    if (chinese_) {
      map_chars(s, [](char32_t c, std::string* out) {
        const bool pad = unicode::is_chinese_char(c);
        if (pad) out->push_back(' ');
        unicode::append_utf8(c, out);
        if (pad) out->push_back(' ');
      });
    }
    if (strip_accents_) TESSERA_RETURN_IF_ERROR(strip_accents(s));
    if (lowercase_) {
      map_chars(s, [](char32_t c, std::string* out) { unicode::append_lowercase(c, out); });
    }
    return Status();
  }

 private:
  bool clean_text_, chinese_, strip_accents_, lowercase_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts)
      : parts_(std::move(parts)) {}
  Status normalize(std::string* s) const override {
    for (const auto& p : parts_) TESSERA_RETURN_IF_ERROR(p->normalize(s));
    return Status();
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

Result<std::unique_ptr<Normalizer>> make(const nlohmann::json& j, int depth) {
  if (depth > 32) return Status::error("normalizer: Sequence nested too deeply");
  auto type = jf::component_type(j, "normalizer");
  if (!type.ok()) return type.status();
  const std::string& t = *type;
  const std::string what = "normalizer " + t;
  const char* w = what.c_str();
  if (t == "NFC") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(unicode::NormalForm::kNfc));
  if (t == "NFD") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(unicode::NormalForm::kNfd));
  if (t == "NFKC") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(unicode::NormalForm::kNfkc));
  if (t == "NFKD") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(unicode::NormalForm::kNfkd));
  if (t == "Lowercase") return std::unique_ptr<Normalizer>(new Lowercase());
  if (t == "StripAccents") return std::unique_ptr<Normalizer>(new StripAccents());
  if (t == "Prepend") {
    auto prepend = jf::get_string(j, "prepend", "", w);
    if (!prepend.ok()) return prepend.status();
    return std::unique_ptr<Normalizer>(new Prepend(std::move(*prepend)));
  }
  if (t == "Replace") {
    auto pattern = jf::get_pattern(j, "pattern", w);
    if (!pattern.ok()) return pattern.status();
    auto content = jf::get_string(j, "content", "", w);
    if (!content.ok()) return content.status();
    return std::unique_ptr<Normalizer>(new Replace(std::move(*pattern), std::move(*content)));
  }
  if (t == "Strip") {
    auto left = jf::get_bool(j, "strip_left", true, w);
    if (!left.ok()) return left.status();
    auto right = jf::get_bool(j, "strip_right", true, w);
    if (!right.ok()) return right.status();
    return std::unique_ptr<Normalizer>(new Strip(*left, *right));
  }
  if (t == "BertNormalizer") {
    auto clean = jf::get_bool(j, "clean_text", true, w);
    auto chinese = jf::get_bool(j, "handle_chinese_chars", true, w);
    auto lower = jf::get_bool(j, "lowercase", true, w);
    if (!clean.ok()) return clean.status();
    if (!chinese.ok()) return chinese.status();
    if (!lower.ok()) return lower.status();
    auto strip = jf::get_bool(j, "strip_accents", *lower, w);  // null: follows lowercase
    if (!strip.ok()) return strip.status();
    return std::unique_ptr<Normalizer>(new BertNormalizer(*clean, *chinese, *strip, *lower));
  }
  if (t == "Sequence") {
    auto it = j.find("normalizers");
    if (it == j.end() || !it->is_array()) {
      return Status::error("normalizer Sequence: field 'normalizers' must be an array");
    }
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (const auto& child : *it) {
      auto n = make(child, depth + 1);
      if (!n.ok()) return n.status();
      if (*n != nullptr) parts.push_back(std::move(*n));
    }
    return std::unique_ptr<Normalizer>(new SequenceNormalizer(std::move(parts)));
  }
  return Status::error("unsupported normalizer type '" + t + "'");
}

}  // namespace

Result<std::unique_ptr<Normalizer>> make_normalizer(const nlohmann::json& j) {
  if (j.is_null()) return std::unique_ptr<Normalizer>();
  return make(j, 0);
}

}  // namespace tessera::tokenizer
