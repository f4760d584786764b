#include "tokenizer/gguf_vocab.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "common/mmap_file.h"

namespace tessera::tokenizer {

namespace {

constexpr std::string_view kPrefix = "tokenizer.ggml.";

std::string key(std::string_view k) { return std::string(kPrefix) + std::string(k); }

// Pre-tokenizers whose models take a whole-word piece before merging and add BOS
// (llama.cpp's LLAMA3 group and tekken).
bool is_llama3_like(std::string_view pre) {
  for (std::string_view p : {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                             "midm-2.0", "lfm2", "jina-v5-nano", "tekken"}) {
    if (pre == p) return true;
  }
  return false;
}

// Texts llama.cpp always treats as control tokens (end of turn/generation, FIM), whatever
// type the file gives them.
bool is_forced_control(std::string_view t) {
  for (std::string_view s :
       {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
        "_<EOT>", "<|eom_id|>", "<｜end▁of▁sentence｜>", "<end_of_utterance>", "<|fim_prefix|>",
        "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|fim_suffix|>", "<fim-suffix>",
        "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|fim_middle|>", "<fim-middle>", "<fim_middle>",
        "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<|fim_repo|>",
        "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>"}) {
    if (t == s) return true;
  }
  return false;
}

class Reader {
 public:
  explicit Reader(const GgufFile& f) : f_(f) {}

  Status error(const std::string& what) const { return Status::error(f_.source() + ": " + what); }

  // The value of key, or nullptr when absent.
  const GgufValue* find(std::string_view k) const { return f_.get(key(k)); }

  Status type_error(std::string_view k, const GgufValue& v, std::string_view expected) const {
    return error(key(k) + " is " + v.debug_string(2) + " (" + std::string(gguf_type_name(v.type())) +
                 "), expected " + std::string(expected));
  }

  Result<std::optional<std::string>> string(std::string_view k) const {
    const GgufValue* v = find(k);
    if (v == nullptr) return std::optional<std::string>();
    auto s = v->to_string();
    if (!s) return type_error(k, *v, "a string");
    return std::optional<std::string>(std::string(*s));
  }

  Status flag(std::string_view k, bool& out) const {
    const GgufValue* v = find(k);
    if (v == nullptr) return Status();
    auto b = v->to_bool();
    if (!b) return type_error(k, *v, "a bool");
    out = *b;
    return Status();
  }

  // A token id key; absent keeps `out`, out of range is an error.
  Status token_id(std::string_view k, size_t n_tokens, std::optional<TokenId>& out) const {
    const GgufValue* v = find(k);
    if (v == nullptr) return Status();
    auto i = v->to_int();
    if (!i) return type_error(k, *v, "an integer token id");
    if (*i < 0 || static_cast<uint64_t>(*i) >= n_tokens) {
      // llama.cpp writes -1 (as u32 0xFFFFFFFF) for "none" in a few converters.
      if (*i == -1 || *i == 0xFFFFFFFFll) {
        out.reset();
        return Status();
      }
      return error(key(k) + " = " + std::to_string(*i) + " is outside the vocabulary (" +
                   std::to_string(n_tokens) + " tokens)");
    }
    out = static_cast<TokenId>(*i);
    return Status();
  }

 private:
  const GgufFile& f_;
};

Status read_entries(const Reader& r, GgufVocab& v) {
  const GgufValue* tokens = r.find("tokens");
  if (tokens == nullptr) return r.error("no " + key("tokens") + " (the file has no vocabulary)");
  auto texts = tokens->to_string_array();
  if (!texts) return r.type_error("tokens", *tokens, "an array of strings");
  if (texts->empty()) return r.error(key("tokens") + " is empty");
  if (texts->size() > static_cast<size_t>(std::numeric_limits<TokenId>::max())) {
    return r.error(key("tokens") + " has " + std::to_string(texts->size()) + " entries, too many for 32-bit ids");
  }
  const size_t n = texts->size();

  std::vector<float> scores;
  if (const GgufValue* s = r.find("scores")) {
    auto f = s->is_array() && (s->elem_type() == GgufType::kF32 || s->elem_type() == GgufType::kI32)
                 ? s->to_float_array()
                 : std::nullopt;
    if (!f) return r.type_error("scores", *s, "an array of f32");
    if (f->size() < n) {
      return r.error(key("scores") + " has " + std::to_string(f->size()) + " entries for " + std::to_string(n) +
                     " tokens");
    }
    scores = std::move(*f);
  }
  std::vector<int64_t> types;
  if (const GgufValue* t = r.find("token_type")) {
    auto i = t->is_array() ? t->to_int_array() : std::nullopt;
    if (!i) return r.type_error("token_type", *t, "an array of i32");
    if (i->size() < n) {
      return r.error(key("token_type") + " has " + std::to_string(i->size()) + " entries for " +
                     std::to_string(n) + " tokens");
    }
    types = std::move(*i);
  }

  v.entries.resize(n);
  v.piece_to_id.reserve(n);
  for (size_t id = 0; id < n; ++id) {
    VocabEntry& e = v.entries[id];
    e.text = std::string((*texts)[id]);
    if (e.text.empty()) e.text = "[EMPTY_" + std::to_string(id) + "]";  // as llama.cpp
    e.score = scores.empty() ? 0.0f : scores[id];
    if (!types.empty()) {
      const int64_t t = types[id];
      if (t < 0 || t > 6) {
        return r.error(key("token_type") + "[" + std::to_string(id) + "] = " + std::to_string(t) +
                       " is not a token type (0..6)");
      }
      e.attr = static_cast<TokenAttr>(t);
    }
    if (is_forced_control(e.text)) e.attr = TokenAttr::kControl;
    auto [it, inserted] = v.piece_to_id.emplace(e.text, static_cast<TokenId>(id));
    if (!inserted) {
      return r.error("token " + quote_untrusted(e.text) + " appears twice in " + key("tokens") + " (ids " +
                     std::to_string(it->second) + " and " + std::to_string(id) + ")");
    }
  }
  return Status();
}

Status read_merges(const Reader& r, GgufVocab& v) {
  const GgufValue* m = r.find("merges");
  if (m == nullptr) return r.error("no " + key("merges") + " (required for a gpt2 vocabulary)");
  auto merges = m->to_string_array();
  if (!merges) return r.type_error("merges", *m, "an array of strings");
  v.merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const std::string_view s = (*merges)[i];
    const size_t space = s.size() > 1 ? s.find(' ', 1) : std::string_view::npos;
    if (space == std::string_view::npos || space + 1 >= s.size()) {
      return r.error(key("merges") + "[" + std::to_string(i) + "] = " + quote_untrusted(s) +
                     " is not two pieces separated by a space");
    }
    v.merges.emplace_back(std::string(s.substr(0, space)), std::string(s.substr(space + 1)));
  }
  return Status();
}

}  // namespace

Result<GgufVocab> read_gguf_vocab(const GgufFile& file) {
  const Reader r(file);
  GgufVocab v;
  auto model = r.string("model");
  TESSERA_RETURN_IF_ERROR(model);
  if (!model->has_value()) return r.error("no " + key("model") + " (the file has no tokenizer)");
  v.model = **model;
  auto pre = r.string("pre");
  TESSERA_RETURN_IF_ERROR(pre);
  v.pre = pre->value_or("");
  v.name = std::string(file.get_string("general.name").value_or(""));

  if (v.model == "llama") {
    v.kind = GgufVocabKind::kSpm;
  } else if (v.model == "gpt2") {
    v.kind = GgufVocabKind::kBpe;
  } else if (v.model == "bert") {
    v.kind = GgufVocabKind::kWpm;
  } else {
    return r.error("tokenizer model " + quote_untrusted(v.model) + " is not supported (llama, gpt2 and bert are)");
  }
  TESSERA_RETURN_IF_ERROR(read_entries(r, v));
  if (v.kind == GgufVocabKind::kBpe) TESSERA_RETURN_IF_ERROR(read_merges(r, v));

  // llama.cpp's defaults per model, each id kept only if it exists.
  const size_t n = v.entries.size();
  auto default_id = [n](TokenId id) { return static_cast<size_t>(id) < n ? std::optional<TokenId>(id) : std::nullopt; };
  switch (v.kind) {
    case GgufVocabKind::kSpm:
      v.bos_id = default_id(1);
      v.eos_id = default_id(2);
      v.unk_id = default_id(0);
      v.add_bos = true;
      v.add_space_prefix = true;
      break;
    case GgufVocabKind::kWpm:
      v.bos_id = default_id(101);
      v.unk_id = default_id(100);
      v.sep_id = default_id(102);
      v.pad_id = default_id(0);
      v.add_bos = true;
      v.add_sep = true;
      break;
    case GgufVocabKind::kBpe:
      v.add_bos = is_llama3_like(v.pre) || v.pre == "chameleon";
      v.ignore_merges = is_llama3_like(v.pre);
      break;
  }
  TESSERA_RETURN_IF_ERROR(r.token_id("bos_token_id", n, v.bos_id));
  TESSERA_RETURN_IF_ERROR(r.token_id("eos_token_id", n, v.eos_id));
  TESSERA_RETURN_IF_ERROR(r.token_id("unknown_token_id", n, v.unk_id));
  TESSERA_RETURN_IF_ERROR(r.token_id("seperator_token_id", n, v.sep_id));  // llama.cpp's spelling
  TESSERA_RETURN_IF_ERROR(r.token_id("padding_token_id", n, v.pad_id));
  TESSERA_RETURN_IF_ERROR(r.flag("add_bos_token", v.add_bos));
  TESSERA_RETURN_IF_ERROR(r.flag("add_eos_token", v.add_eos));
  TESSERA_RETURN_IF_ERROR(r.flag("add_sep_token", v.add_sep));
  TESSERA_RETURN_IF_ERROR(r.flag("add_space_prefix", v.add_space_prefix));
  if (v.add_bos && !v.bos_id) return r.error(key("add_bos_token") + " is true but there is no BOS token");
  if (v.add_eos && !v.eos_id) return r.error(key("add_eos_token") + " is true but there is no EOS token");
  if (v.kind == GgufVocabKind::kWpm && v.add_sep && !v.sep_id) {
    return r.error("a bert vocabulary needs a separator token (" + key("seperator_token_id") + ")");
  }
  return v;
}

}  // namespace tessera::tokenizer
