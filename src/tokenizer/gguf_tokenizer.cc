#include "tokenizer/gguf_tokenizer.h"

#include <algorithm>
#include <cctype>

#include "loader/gguf.h"
#include "tokenizer/utf8.h"

namespace tessera::tokenizer {

namespace {

constexpr std::string_view kMetaspace = "\xE2\x96\x81";

std::string escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    if (c == ' ') {
      out.append(kMetaspace);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string lower_ascii(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Tokens matched in the text before the model runs: control, user-defined and unknown
// tokens (llama.cpp's special-token cache). Phi-3's are right-stripped, as llama.cpp does.
std::vector<SpecialTokenSpec> special_specs(const GgufVocab& v) {
  const std::string name = lower_ascii(v.name);
  const bool phi3 = name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos;
  std::vector<SpecialTokenSpec> specs;
  for (size_t id = 0; id < v.entries.size(); ++id) {
    const VocabEntry& e = v.entries[id];
    const bool special = e.attr == TokenAttr::kControl || e.attr == TokenAttr::kUserDefined ||
                         e.attr == TokenAttr::kUnknown;
    if (!special) continue;
    SpecialTokenSpec s{e.text, static_cast<TokenId>(id), false, false};
    if (phi3) s.rstrip = e.text != "<unk>" && e.text != "<s>" && e.text != "<|endoftext|>";
    specs.push_back(std::move(s));
  }
  if (phi3) {
    if (auto id = find_piece(v.piece_to_id, "</s>"); id && !is_special_attr(v.entries[*id].attr)) {
      specs.push_back({"</s>", *id, false, true});
    }
  }
  return specs;
}

}  // namespace

Result<std::unique_ptr<GgufTokenizer>> GgufTokenizer::create(GgufVocab vocab, const std::string& source) {
  std::unique_ptr<GgufTokenizer> t(new GgufTokenizer());
  t->vocab_ = std::move(vocab);
  const GgufVocab& v = t->vocab_;
  t->matcher_ = SpecialTokenMatcher(special_specs(v));
  switch (v.kind) {
    case GgufVocabKind::kSpm:
      t->spm_.emplace(v.entries, v.piece_to_id, v.unk_id);
      break;
    case GgufVocabKind::kBpe: {
      auto bpe = ByteLevelBpe::build(v.piece_to_id, v.merges);
      if (!bpe.ok()) return Status::error(source + ": tokenizer.ggml.merges: " + bpe.error());
      t->bpe_.emplace(std::move(bpe.value()));
      auto patterns = pre_tokenizer_patterns(v.pre);
      if (!patterns.ok()) return Status::error(source + ": tokenizer.ggml.pre: " + patterns.error());
      auto splitter = RegexSplitter::compile(*patterns);
      if (!splitter.ok()) return Status::error(source + ": " + splitter.error());
      t->splitter_.emplace(std::move(splitter.value()));
      break;
    }
    case GgufVocabKind::kWpm: {
      size_t max_len = 0;
      for (const VocabEntry& e : v.entries) max_len = std::max(max_len, e.text.size());
      t->wpm_.emplace(v.piece_to_id, max_len, v.unk_id, /*lowercase=*/true, /*strip_accents=*/true);
      break;
    }
  }
  auto text_of = [&](std::optional<TokenId> id) { return id ? v.entries[static_cast<size_t>(*id)].text : std::string(); };
  t->special_.bos_id = v.bos_id;
  t->special_.eos_id = v.eos_id;
  t->special_.pad_id = v.pad_id;
  t->special_.unk_id = v.unk_id;
  t->special_.bos_token = text_of(v.bos_id);
  t->special_.eos_token = text_of(v.eos_id);
  return t;
}

void GgufTokenizer::encode_fragment(std::string_view text, bool after_special, std::vector<TokenId>& out) const {
  switch (vocab_.kind) {
    case GgufVocabKind::kSpm: {
      // llama.cpp prefixes a space at the start and after every special token.
      std::string s = vocab_.add_space_prefix && after_special ? " " : "";
      s.append(text);
      spm_->encode(escape_spaces(s), out);
      break;
    }
    case GgufVocabKind::kBpe: {
      auto words = splitter_->split(text);
      // The splitter only fails on PCRE2 resource limits; fall back to whole-text BPE.
      if (!words.ok()) {
        bpe_->encode_word(text, vocab_.ignore_merges, out);
        break;
      }
      for (std::string_view w : *words) bpe_->encode_word(w, vocab_.ignore_merges, out);
      break;
    }
    case GgufVocabKind::kWpm:
      wpm_->encode(text, out);
      break;
  }
}

Result<std::vector<TokenId>> GgufTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  if (!is_valid_utf8(text)) return Status::error("encode: input is not valid UTF-8");
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special_tokens && vocab_.add_bos && vocab_.bos_id) out.push_back(*vocab_.bos_id);
  bool after_special = true;
  for (const TextFragment& f : matcher_.split(text)) {
    if (f.token) {
      out.push_back(*f.token);
      after_special = true;
    } else {
      encode_fragment(f.text, after_special, out);
      after_special = false;
    }
  }
  if (add_special_tokens && vocab_.add_eos && vocab_.eos_id) out.push_back(*vocab_.eos_id);
  if (add_special_tokens && vocab_.kind == GgufVocabKind::kWpm && vocab_.add_sep && vocab_.sep_id) {
    out.push_back(*vocab_.sep_id);
  }
  return out;
}

Result<std::string> GgufTokenizer::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  TESSERA_RETURN_IF_ERROR(check_ids(ids, vocab_.entries.size()));
  switch (vocab_.kind) {
    case GgufVocabKind::kSpm:
      return decode_metaspace(vocab_.entries, ids, skip_special_tokens, vocab_.add_space_prefix);
    case GgufVocabKind::kBpe:
      return decode_byte_level(vocab_.entries, ids, skip_special_tokens);
    case GgufVocabKind::kWpm:
      return decode_metaspace(vocab_.entries, ids, skip_special_tokens, /*strip_leading_space=*/true);
  }
  return std::string();
}

std::optional<std::string> GgufTokenizer::id_to_token(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= vocab_.entries.size()) return std::nullopt;
  return vocab_.entries[static_cast<size_t>(id)].text;
}

std::optional<TokenId> GgufTokenizer::token_to_id(std::string_view token) const {
  return find_piece(vocab_.piece_to_id, token);
}

bool GgufTokenizer::is_special(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= vocab_.entries.size()) return false;
  return is_special_attr(vocab_.entries[static_cast<size_t>(id)].attr);
}

Result<std::unique_ptr<Tokenizer>> load_gguf_tokenizer(const std::string& path) {
  auto file = GgufFile::open(path);
  TESSERA_RETURN_IF_ERROR(file);
  auto vocab = read_gguf_vocab(**file);
  TESSERA_RETURN_IF_ERROR(vocab);
  auto tok = GgufTokenizer::create(std::move(vocab.value()), path);
  TESSERA_RETURN_IF_ERROR(tok);
  return std::unique_ptr<Tokenizer>(std::move(tok.value()));
}

}  // namespace tessera::tokenizer
