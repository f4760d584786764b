#include "tokenizer/decoders.h"

#include "tokenizer/json_fields.h"
#include "tokenizer/pcre_regex.h"
#include "tokenizer/pre_tokenizers.h"
#include "tokenizer/unicode.h"

namespace tessera::tokenizer {
namespace {

namespace jf = json_fields;
using Tokens = std::vector<std::string>;

class ByteLevelDecoder final : public Decoder {
 public:
  Status decode_chain(Tokens* tokens) const override {
    std::string bytes;
    for (const std::string& t : *tokens) {
      // A token with any char outside the byte map contributes its UTF-8 unchanged.
      const size_t mark = bytes.size();
      bool all = true;
      for (size_t pos = 0; pos < t.size() && all;) {
        const int b = byte_level_byte(unicode::decode_utf8(t, &pos));
        all = b >= 0;
        if (all) bytes.push_back(static_cast<char>(b));
      }
      if (!all) {
        bytes.resize(mark);
        bytes += t;
      }
    }
    tokens->assign(1, unicode::utf8_lossy(bytes));
    return Status();
  }
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  Status decode_chain(Tokens* tokens) const override {
    for (size_t i = 0; i < tokens->size(); ++i) {
      std::string& t = (*tokens)[i];
      std::string out;
      for (size_t pos = 0; pos < t.size();) {
        if (t.compare(pos, replacement_.size(), replacement_) == 0) {
          if (!(i == 0 && strip_first_)) out.push_back(' ');
          pos += replacement_.size();
        } else {
          const size_t len = unicode::utf8_len(static_cast<unsigned char>(t[pos]));
          out.append(t, pos, len);
          pos += len;
        }
      }
      t = std::move(out);
    }
    return Status();
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class ByteFallbackDecoder final : public Decoder {
 public:
  Status decode_chain(Tokens* tokens) const override {
    Tokens out;
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (unicode::is_valid_utf8(pending)) {
        out.push_back(pending);
      } else {
        for (size_t i = 0; i < pending.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
      }
      pending.clear();
    };
    for (std::string& t : *tokens) {
      int byte = -1;
      // Rust's u8::from_str_radix also takes a leading '+', as in "<0x+F>".
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
        const int lo = hex_digit(t[4]);
        const int hi = t[3] == '+' ? 0 : hex_digit(t[3]);
        if (hi >= 0 && lo >= 0) byte = hi * 16 + lo;
      }
      if (byte >= 0) {
        pending.push_back(static_cast<char>(byte));
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    *tokens = std::move(out);
    return Status();
  }
};

class FuseDecoder final : public Decoder {
 public:
  Status decode_chain(Tokens* tokens) const override {
    std::string all;
    for (const auto& t : *tokens) all += t;
    tokens->assign(1, std::move(all));
    return Status();
  }
};

class StripDecoder final : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  Status decode_chain(Tokens* tokens) const override {
    for (std::string& t : *tokens) {
      std::vector<std::pair<size_t, size_t>> chars;  // byte offset, length
      for (size_t pos = 0; pos < t.size();) {
        const size_t len = unicode::utf8_len(static_cast<unsigned char>(t[pos]));
        chars.emplace_back(pos, len);
        pos += len;
      }
      auto is_content = [&](size_t i) {
        return t.compare(chars[i].first, chars[i].second, content_) == 0;
      };
      size_t start_cut = 0;
      for (size_t i = 0; i < chars.size() && i < start_; ++i) {
        if (!is_content(i)) break;
        start_cut = i + 1;
      }
      size_t stop_cut = chars.size();
      for (size_t i = 0; i < stop_ && i < chars.size(); ++i) {
        const size_t idx = chars.size() - i - 1;
        if (!is_content(idx)) break;
        stop_cut = idx;
      }
      if (stop_cut <= start_cut) {
        t.clear();
      } else {
        const size_t b = start_cut < chars.size() ? chars[start_cut].first : t.size();
        const size_t e = stop_cut < chars.size() ? chars[stop_cut].first : t.size();
        t = t.substr(b, e - b);
      }
    }
    return Status();
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  Status decode_chain(Tokens* tokens) const override {
    std::vector<MatchSpan> spans;
    for (std::string& t : *tokens) {
      TESSERA_RETURN_IF_ERROR(pattern_.find_matches(t, &spans));
      std::string out;
      for (const auto& m : spans) {
        if (m.is_match) {
          out += content_;
        } else {
          out.append(t, m.start, m.end - m.start);
        }
      }
      t = std::move(out);
    }
    return Status();
  }

 private:
  Pattern pattern_;
  std::string content_;
};

void replace_all(std::string* s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  size_t prev = 0;
  for (size_t pos = s->find(from); pos != std::string::npos; pos = s->find(from, prev)) {
    out.append(*s, prev, pos - prev);
    out += to;
    prev = pos + from.size();
  }
  out.append(*s, prev, std::string::npos);
  *s = std::move(out);
}

// HF's decoders::wordpiece::cleanup.
void cleanup(std::string* s) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},
      {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},   {" do not", " don't"},
      {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) replace_all(s, from, to);
}

class WordPieceDecoder final : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup)
      : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  Status decode_chain(Tokens* tokens) const override {
    for (size_t i = 0; i < tokens->size(); ++i) {
      std::string& t = (*tokens)[i];
      if (i != 0) {
        if (t.compare(0, prefix_.size(), prefix_) == 0) {
          t.erase(0, prefix_.size());
        } else {
          t.insert(0, " ");
        }
      }
      if (cleanup_) cleanup(&t);
    }
    return Status();
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

class BpeDecoder final : public Decoder {
 public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  Status decode_chain(Tokens* tokens) const override {
    for (size_t i = 0; i < tokens->size(); ++i) {
      replace_all(&(*tokens)[i], suffix_, i + 1 == tokens->size() ? "" : " ");
    }
    return Status();
  }

 private:
  std::string suffix_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts)
      : parts_(std::move(parts)) {}
  Status decode_chain(Tokens* tokens) const override {
    for (const auto& p : parts_) TESSERA_RETURN_IF_ERROR(p->decode_chain(tokens));
    return Status();
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

Result<std::unique_ptr<Decoder>> make(const nlohmann::json& j, int depth) {
  if (depth > 32) return Status::error("decoder: Sequence nested too deeply");
  auto type = jf::component_type(j, "decoder");
  if (!type.ok()) return type.status();
  const std::string& t = *type;
  const std::string what = "decoder " + t;
  const char* w = what.c_str();
  using Ptr = std::unique_ptr<Decoder>;
  if (t == "ByteLevel") return Ptr(new ByteLevelDecoder());
  if (t == "ByteFallback") return Ptr(new ByteFallbackDecoder());
  if (t == "Fuse") return Ptr(new FuseDecoder());
  if (t == "Metaspace") {
    auto rep = jf::get_char(j, "replacement", "\xE2\x96\x81", w);
    if (!rep.ok()) return rep.status();
    auto scheme = jf::get_string(j, "prepend_scheme", "", w);
    if (!scheme.ok()) return scheme.status();
    auto add_prefix = jf::get_bool(j, "add_prefix_space", true, w);
    if (!add_prefix.ok()) return add_prefix.status();
    bool strip_first = *scheme != "never";
    if (!scheme->empty() && *scheme != "always" && *scheme != "first" && *scheme != "never") {
      return Status::error(what + ": unknown prepend_scheme '" + *scheme + "'");
    }
    if (!*add_prefix) strip_first = false;
    return Ptr(new MetaspaceDecoder(std::move(*rep), strip_first));
  }
  if (t == "Strip") {
    auto content = jf::get_char(j, "content", " ", w);
    auto start = jf::get_int(j, "start", 0, w);
    auto stop = jf::get_int(j, "stop", 0, w);
    if (!content.ok()) return content.status();
    if (!start.ok()) return start.status();
    if (!stop.ok()) return stop.status();
    if (*start < 0 || *stop < 0) return Status::error(what + ": start/stop must be >= 0");
    return Ptr(new StripDecoder(std::move(*content), static_cast<size_t>(*start),
                                static_cast<size_t>(*stop)));
  }
  if (t == "Replace") {
    auto pattern = jf::get_pattern(j, "pattern", w);
    if (!pattern.ok()) return pattern.status();
    auto content = jf::get_string(j, "content", "", w);
    if (!content.ok()) return content.status();
    return Ptr(new ReplaceDecoder(std::move(*pattern), std::move(*content)));
  }
  if (t == "WordPiece") {
    auto prefix = jf::get_string(j, "prefix", "##", w);
    auto clean = jf::get_bool(j, "cleanup", true, w);
    if (!prefix.ok()) return prefix.status();
    if (!clean.ok()) return clean.status();
    return Ptr(new WordPieceDecoder(std::move(*prefix), *clean));
  }
  if (t == "BPEDecoder") {
    auto suffix = jf::get_string(j, "suffix", "</w>", w);
    if (!suffix.ok()) return suffix.status();
    return Ptr(new BpeDecoder(std::move(*suffix)));
  }
  if (t == "Sequence") {
    auto it = j.find("decoders");
    if (it == j.end() || !it->is_array()) {
      return Status::error("decoder Sequence: field 'decoders' must be an array");
    }
    std::vector<Ptr> parts;
    for (const auto& child : *it) {
      auto d = make(child, depth + 1);
      if (!d.ok()) return d.status();
      if (*d != nullptr) parts.push_back(std::move(*d));
    }
    return Ptr(new SequenceDecoder(std::move(parts)));
  }
  return Status::error("unsupported decoder type '" + t + "'");
}

}  // namespace

Result<std::unique_ptr<Decoder>> make_decoder(const nlohmann::json& j) {
  if (j.is_null()) return std::unique_ptr<Decoder>();
  return make(j, 0);
}

}  // namespace tessera::tokenizer
