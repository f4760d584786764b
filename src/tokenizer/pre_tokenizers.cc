#include "tokenizer/pre_tokenizers.h"

#include <algorithm>
#include <array>
#include <vector>

#include "tokenizer/json_fields.h"
#include "tokenizer/pcre_regex.h"
#include "tokenizer/unicode.h"

namespace tessera::tokenizer {
namespace {

namespace jf = json_fields;

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Result<Behavior> parse_behavior(const nlohmann::json& j, const char* what, Behavior fallback) {
  auto s = jf::get_string(j, "behavior", "", what);
  if (!s.ok()) return s.status();
  if (s->empty()) return fallback;
  if (*s == "Removed") return Behavior::kRemoved;
  if (*s == "Isolated") return Behavior::kIsolated;
  if (*s == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (*s == "MergedWithNext") return Behavior::kMergedWithNext;
  if (*s == "Contiguous") return Behavior::kContiguous;
  return Status::error(std::string(what) + ": unknown behavior '" + *s + "'");
}

// HF NormalizedString::split: folds the match spans by behavior, then emits the kept ones.
Status emit_split(const PreToken& in, std::vector<MatchSpan>& spans, Behavior behavior,
                  PreTokenSink out) {
  std::vector<MatchSpan> merged;  // is_match here means "remove"
  switch (behavior) {
    case Behavior::kRemoved: merged.swap(spans); break;
    case Behavior::kIsolated:
      for (auto& s : spans) s.is_match = false;
      merged.swap(spans);
      break;
    case Behavior::kContiguous: {
      bool previous = false;
      for (const auto& s : spans) {
        if (s.is_match == previous && !merged.empty()) {
          merged.back().end = s.end;
        } else {
          merged.push_back({s.start, s.end, false});
        }
        previous = s.is_match;
      }
      break;
    }
    case Behavior::kMergedWithPrevious: {
      bool previous = false;
      for (const auto& s : spans) {
        if (s.is_match && !previous && !merged.empty()) {
          merged.back().end = s.end;
        } else {
          merged.push_back({s.start, s.end, false});
        }
        previous = s.is_match;
      }
      break;
    }
    case Behavior::kMergedWithNext: {
      bool previous = false;
      for (size_t i = spans.size(); i-- > 0;) {
        const auto& s = spans[i];
        if (s.is_match && !previous && !merged.empty()) {
          merged.back().start = s.start;
        } else {
          merged.push_back({s.start, s.end, false});
        }
        previous = s.is_match;
      }
      std::reverse(merged.begin(), merged.end());
      break;
    }
  }
  for (const auto& s : merged) {
    if (s.is_match || s.end <= s.start) continue;
    TESSERA_RETURN_IF_ERROR(
        out(PreToken{in.text.substr(s.start, s.end - s.start), in.at_origin && s.start == 0}));
  }
  return Status();
}

// HF's `impl Pattern for Fn(char) -> bool`: every matching char is a match of its own.
template <typename Pred>
void char_matches(std::string_view text, Pred&& pred, std::vector<MatchSpan>* out) {
  out->clear();
  size_t last = 0, pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    const char32_t c = unicode::decode_utf8(text, &pos);
    if (pred(c)) {
      if (last < start) out->push_back({last, start, false});
      out->push_back({start, pos, true});
      last = pos;
    }
  }
  if (last < text.size()) out->push_back({last, text.size(), false});
}

bool is_bert_punctuation(char32_t c) {
  const bool ascii_punct = (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
                           (c >= 123 && c <= 126);
  return ascii_punct || unicode::is_punctuation(c);
}

struct ByteTables {
  std::array<std::string, 256> chars;
  std::array<char32_t, 256> codepoints;
  ByteTables() {
    // Printable Latin-1 bytes stand for themselves; the rest map to U+0100 upwards in order.
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      codepoints[b] = keep ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      unicode::append_utf8(codepoints[b], &chars[b]);
    }
  }
};

const ByteTables& byte_tables() {
  static const ByteTables tables;
  return tables;
}

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex, std::shared_ptr<const Regex> re)
      : add_prefix_space_(add_prefix_space), use_regex_(use_regex), re_(std::move(re)) {}

  Status pre_tokenize(const PreToken& in, PreTokenSink out) const override {
    std::string prefixed;
    std::string_view text = in.text;
    if (add_prefix_space_ && (text.empty() || text[0] != ' ')) {
      prefixed.reserve(text.size() + 1);
      prefixed.push_back(' ');
      prefixed.append(text);
      text = prefixed;
    }
    if (!use_regex_) return emit(PreToken{text, in.at_origin}, out);
    size_t prev = 0;
    Status inner;
    auto piece = [&](size_t s, size_t e) {
      if (!inner.ok()) return;
      if (s > prev) inner = emit(PreToken{text.substr(prev, s - prev), in.at_origin && prev == 0}, out);
      if (inner.ok() && e > s) inner = emit(PreToken{text.substr(s, e - s), in.at_origin && s == 0}, out);
      prev = e;
    };
    TESSERA_RETURN_IF_ERROR(re_->for_each_match(text, piece));
    TESSERA_RETURN_IF_ERROR(inner);
    if (prev < text.size()) {
      return emit(PreToken{text.substr(prev), in.at_origin && prev == 0}, out);
    }
    return Status();
  }

  bool ends_with_byte_level() const override { return true; }
  void set_raw_byte_output() override { raw_output_ = true; }

 private:
  Status emit(const PreToken& piece, PreTokenSink out) const {
    if (raw_output_) return out(piece);
    std::string mapped;
    mapped.reserve(piece.text.size() * 2);
    const ByteTables& t = byte_tables();
    for (char c : piece.text) mapped += t.chars[static_cast<unsigned char>(c)];
    return out(PreToken{mapped, piece.at_origin});
  }

  bool add_prefix_space_;
  bool use_regex_;
  bool raw_output_ = false;
  std::shared_ptr<const Regex> re_;
};

class Split final : public PreTokenizer {
 public:
  Split(Pattern pattern, Behavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  Status pre_tokenize(const PreToken& in, PreTokenSink out) const override {
    std::vector<MatchSpan> spans;
    TESSERA_RETURN_IF_ERROR(pattern_.find_matches(in.text, &spans));
    if (invert_) {
      for (auto& s : spans) s.is_match = !s.is_match;
    }
    return emit_split(in, spans, behavior_, out);
  }

 private:
  Pattern pattern_;
  Behavior behavior_;
  bool invert_;
};

// Regex-based splitters of fixed shape (Whitespace).
class RegexSplit final : public PreTokenizer {
 public:
  RegexSplit(std::shared_ptr<const Regex> re, Behavior behavior, bool invert)
      : re_(std::move(re)), behavior_(behavior), invert_(invert) {}
  Status pre_tokenize(const PreToken& in, PreTokenSink out) const override {
    std::vector<MatchSpan> spans;
    TESSERA_RETURN_IF_ERROR(re_->find_matches(in.text, &spans));
    if (invert_) {
      for (auto& s : spans) s.is_match = !s.is_match;
    }
    return emit_split(in, spans, behavior_, out);
  }

 private:
  std::shared_ptr<const Regex> re_;
  Behavior behavior_;
  bool invert_;
};

enum class CharClass { kWhitespace, kNumeric, kPunctuation, kEquals };

class CharSplit final : public PreTokenizer {
 public:
  CharSplit(CharClass cls, Behavior behavior, char32_t ch = 0)
      : cls_(cls), behavior_(behavior), ch_(ch) {}
  Status pre_tokenize(const PreToken& in, PreTokenSink out) const override {
    std::vector<MatchSpan> spans;
    char_matches(in.text, [this](char32_t c) { return test(c); }, &spans);
    return emit_split(in, spans, behavior_, out);
  }

 private:
  bool test(char32_t c) const {
    switch (cls_) {
      case CharClass::kWhitespace: return unicode::is_whitespace(c);
      case CharClass::kNumeric: return unicode::is_numeric(c);
      case CharClass::kPunctuation: return is_bert_punctuation(c);
      case CharClass::kEquals: return c == ch_;
    }
    return false;
  }
  CharClass cls_;
  Behavior behavior_;
  char32_t ch_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {
    size_t pos = 0;
    replacement_cp_ = unicode::decode_utf8(replacement_, &pos);
  }
  Status pre_tokenize(const PreToken& in, PreTokenSink out) const override {
    std::string s;
    s.reserve(in.text.size() + 8);
    const bool starts_with_rep = in.text.substr(0, 1) == " " ||
                                 in.text.substr(0, replacement_.size()) == replacement_;
    const bool prepend = !starts_with_rep && (scheme_ == PrependScheme::kAlways ||
                                              (scheme_ == PrependScheme::kFirst && in.at_origin));
    if (prepend) s += replacement_;
    for (char c : in.text) {
      if (c == ' ') {
        s += replacement_;
      } else {
        s.push_back(c);
      }
    }
    if (!split_) return out(PreToken{s, in.at_origin});
    std::vector<MatchSpan> spans;
    char_matches(s, [this](char32_t c) { return c == replacement_cp_; }, &spans);
    return emit_split(PreToken{s, in.at_origin}, spans, Behavior::kMergedWithNext, out);
  }

 private:
  std::string replacement_;
  char32_t replacement_cp_ = 0;
  PrependScheme scheme_;
  bool split_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts)
      : parts_(std::move(parts)) {}
  Status pre_tokenize(const PreToken& in, PreTokenSink out) const override {
    return run(0, in, out);
  }
  bool ends_with_byte_level() const override {
    return !parts_.empty() && parts_.back()->ends_with_byte_level();
  }
  void set_raw_byte_output() override {
    if (!parts_.empty()) parts_.back()->set_raw_byte_output();
  }

 private:
  Status run(size_t idx, const PreToken& in, PreTokenSink out) const {
    if (idx == parts_.size()) return out(in);
    return parts_[idx]->pre_tokenize(in, [&](const PreToken& p) { return run(idx + 1, p, out); });
  }
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

std::shared_ptr<const Regex> shared_regex(const char* pattern) {
  auto re = Regex::compile(pattern);
  return re.ok() ? std::shared_ptr<const Regex>(std::move(*re)) : nullptr;
}

const std::shared_ptr<const Regex>& gpt2_regex() {
  static const std::shared_ptr<const Regex> re = shared_regex(
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
  return re;
}

// HF's Whitespace uses the Rust regex crate, whose \w is Alphabetic, M, Nd, Pc, Join_Control.
const std::shared_ptr<const Regex>& whitespace_regex() {
  static const std::shared_ptr<const Regex> re = shared_regex(
      R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]+)"
      R"(|[^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}\p{White_Space}]+)");
  return re;
}

Result<std::unique_ptr<PreTokenizer>> make(const nlohmann::json& j, int depth) {
  if (depth > 32) return Status::error("pre_tokenizer: Sequence nested too deeply");
  auto type = jf::component_type(j, "pre_tokenizer");
  if (!type.ok()) return type.status();
  const std::string& t = *type;
  const std::string what = "pre_tokenizer " + t;
  const char* w = what.c_str();
  using Ptr = std::unique_ptr<PreTokenizer>;
  if (t == "ByteLevel") {
    auto prefix = jf::get_bool(j, "add_prefix_space", true, w);
    if (!prefix.ok()) return prefix.status();
    auto use_regex = jf::get_bool(j, "use_regex", true, w);
    if (!use_regex.ok()) return use_regex.status();
    if (gpt2_regex() == nullptr) return Status::error("cannot compile the GPT-2 regex");
    return Ptr(new ByteLevel(*prefix, *use_regex, gpt2_regex()));
  }
  if (t == "Split") {
    auto pattern = jf::get_pattern(j, "pattern", w);
    if (!pattern.ok()) return pattern.status();
    auto behavior = parse_behavior(j, w, Behavior::kRemoved);
    if (!behavior.ok()) return behavior.status();
    if (!j.contains("behavior")) return Status::error(what + ": missing field 'behavior'");
    auto invert = jf::get_bool(j, "invert", false, w);
    if (!invert.ok()) return invert.status();
    return Ptr(new Split(std::move(*pattern), *behavior, *invert));
  }
  if (t == "Metaspace") {
    auto rep = jf::get_char(j, "replacement", "\xE2\x96\x81", w);
    if (!rep.ok()) return rep.status();
    auto split = jf::get_bool(j, "split", true, w);
    if (!split.ok()) return split.status();
    auto scheme_s = jf::get_string(j, "prepend_scheme", "", w);
    if (!scheme_s.ok()) return scheme_s.status();
    auto add_prefix = jf::get_bool(j, "add_prefix_space", true, w);
    if (!add_prefix.ok()) return add_prefix.status();
    PrependScheme scheme = PrependScheme::kAlways;
    if (*scheme_s == "first") {
      scheme = PrependScheme::kFirst;
    } else if (*scheme_s == "never") {
      scheme = PrependScheme::kNever;
    } else if (!scheme_s->empty() && *scheme_s != "always") {
      return Status::error(what + ": unknown prepend_scheme '" + *scheme_s + "'");
    }
    if (!*add_prefix) {  // legacy field: false means never
      if (!scheme_s->empty() && scheme != PrependScheme::kNever) {
        return Status::error(what + ": add_prefix_space false contradicts prepend_scheme");
      }
      scheme = PrependScheme::kNever;
    }
    return Ptr(new Metaspace(std::move(*rep), scheme, *split));
  }
  if (t == "Digits") {
    auto individual = jf::get_bool(j, "individual_digits", false, w);
    if (!individual.ok()) return individual.status();
    return Ptr(new CharSplit(CharClass::kNumeric,
                             *individual ? Behavior::kIsolated : Behavior::kContiguous));
  }
  if (t == "Punctuation") {
    auto behavior = parse_behavior(j, w, Behavior::kIsolated);
    if (!behavior.ok()) return behavior.status();
    return Ptr(new CharSplit(CharClass::kPunctuation, *behavior));
  }
  if (t == "WhitespaceSplit") return Ptr(new CharSplit(CharClass::kWhitespace, Behavior::kRemoved));
  if (t == "Whitespace") {
    if (whitespace_regex() == nullptr) return Status::error("cannot compile the Whitespace regex");
    return Ptr(new RegexSplit(whitespace_regex(), Behavior::kRemoved, /*invert=*/true));
  }
  if (t == "CharDelimiterSplit") {
    auto delim = jf::get_char(j, "delimiter", "", w);
    if (!delim.ok()) return delim.status();
    size_t pos = 0;
    const char32_t c = unicode::decode_utf8(*delim, &pos);
    return Ptr(new CharSplit(CharClass::kEquals, Behavior::kRemoved, c));
  }
  if (t == "BertPreTokenizer") {
    std::vector<Ptr> parts;
    parts.push_back(Ptr(new CharSplit(CharClass::kWhitespace, Behavior::kRemoved)));
    parts.push_back(Ptr(new CharSplit(CharClass::kPunctuation, Behavior::kIsolated)));
    return Ptr(new SequencePreTokenizer(std::move(parts)));
  }
  if (t == "Sequence") {
    auto it = j.find("pretokenizers");
    if (it == j.end() || !it->is_array()) {
      return Status::error("pre_tokenizer Sequence: field 'pretokenizers' must be an array");
    }
    std::vector<Ptr> parts;
    for (const auto& child : *it) {
      auto p = make(child, depth + 1);
      if (!p.ok()) return p.status();
      if (*p != nullptr) parts.push_back(std::move(*p));
    }
    return Ptr(new SequencePreTokenizer(std::move(parts)));
  }
  return Status::error("unsupported pre_tokenizer type '" + t + "'");
}

}  // namespace

Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const nlohmann::json& j) {
  if (j.is_null()) return std::unique_ptr<PreTokenizer>();
  return make(j, 0);
}

const std::string& byte_level_char(unsigned char b) { return byte_tables().chars[b]; }

int byte_level_byte(char32_t c) {
  static const std::array<int16_t, 324> inverse = [] {
    std::array<int16_t, 324> inv{};
    inv.fill(-1);
    for (int b = 0; b < 256; ++b) inv[byte_tables().codepoints[b]] = static_cast<int16_t>(b);
    return inv;
  }();
  return c < inverse.size() ? inverse[c] : -1;
}

}  // namespace tessera::tokenizer
