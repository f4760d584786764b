#include "tokenizer/added_tokens.h"

#include <algorithm>

#include "tokenizer/bpe_model.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/unicode.h"

namespace tessera::tokenizer {
namespace {

namespace jf = json_fields;

// The char ending at byte `end` of text (valid UTF-8), for single_word's \w checks.
char32_t char_before(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  return unicode::decode_utf8(text, &start);
}

// Start of the whitespace run that ends text (regex `\s*$`).
size_t trailing_space_start(std::string_view text, size_t end) {
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    size_t pos = start;
    if (!unicode::is_whitespace(unicode::decode_utf8(text, &pos))) break;
    end = start;
  }
  return end;
}

// End of the whitespace run that starts at pos (regex `^\s*`).
size_t leading_space_end(std::string_view text, size_t pos) {
  while (pos < text.size()) {
    size_t next = pos;
    if (!unicode::is_whitespace(unicode::decode_utf8(text, &next))) break;
    pos = next;
  }
  return pos;
}

Result<AddedToken> parse_token(const nlohmann::json& j, int64_t* file_id) {
  const char* w = "added_tokens entry";
  if (!j.is_object()) return Status::error("added_tokens entries must be objects");
  auto content = jf::get_string(j, "content", "", w);
  if (!content.ok()) return content.status();
  if (!j.contains("content")) return Status::error("added_tokens entry without 'content'");
  auto id = jf::get_int(j, "id", -1, w);
  if (!id.ok()) return id.status();
  if (*id < 0 || *id > INT32_MAX) return Status::error("added_tokens entry needs a valid 'id'");
  *file_id = *id;
  AddedToken t;
  t.content = std::move(*content);
  auto special = jf::get_bool(j, "special", false, w);
  auto single = jf::get_bool(j, "single_word", false, w);
  auto lstrip = jf::get_bool(j, "lstrip", false, w);
  auto rstrip = jf::get_bool(j, "rstrip", false, w);
  if (!special.ok()) return special.status();
  if (!single.ok()) return single.status();
  if (!lstrip.ok()) return lstrip.status();
  if (!rstrip.ok()) return rstrip.status();
  auto normalized = jf::get_bool(j, "normalized", !*special, w);
  if (!normalized.ok()) return normalized.status();
  t.special = *special;
  t.single_word = *single;
  t.lstrip = *lstrip;
  t.rstrip = *rstrip;
  t.normalized = *normalized;
  return t;
}

}  // namespace

void AddedVocabulary::Trie::add(std::string_view s, TokenId id) {
  if (s.empty()) return;
  const auto index = static_cast<int32_t>(patterns.size());
  patterns.push_back(id);
  first_byte[static_cast<unsigned char>(s[0])] = true;
  int32_t node = 0;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    auto& kids = nodes[node].children;
    auto it = std::lower_bound(kids.begin(), kids.end(), c,
                               [](const auto& kid, unsigned char v) { return kid.first < v; });
    if (it != kids.end() && it->first == c) {
      node = it->second;
    } else {
      const auto child = static_cast<int32_t>(nodes.size());
      kids.insert(it, {c, child});
      nodes.emplace_back();  // may reallocate: `kids` is not used after this
      node = child;
    }
  }
  if (nodes[node].pattern < 0) nodes[node].pattern = index;  // duplicates: the first wins
}

size_t AddedVocabulary::Trie::longest_at(std::string_view text, size_t pos,
                                         int32_t* pattern) const {
  size_t best = 0;
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const auto& kids = nodes[node].children;
    auto it = std::lower_bound(kids.begin(), kids.end(), c,
                               [](const auto& kid, unsigned char v) { return kid.first < v; });
    if (it == kids.end() || it->first != c) break;
    node = it->second;
    if (nodes[node].pattern >= 0) {
      best = i + 1 - pos;
      *pattern = nodes[node].pattern;
    }
  }
  return best;
}

Result<AddedVocabulary> AddedVocabulary::build(const nlohmann::json& added_tokens,
                                               const BpeModel& model,
                                               const Normalizer* normalizer) {
  AddedVocabulary v;
  if (added_tokens.is_null()) return v;
  if (!added_tokens.is_array()) return Status::error("'added_tokens' must be an array");
  std::vector<AddedToken> special_list, plain_list;  // HF's special_tokens / added_tokens
  const auto vocab_size = static_cast<int64_t>(model.num_entries());
  for (const auto& entry : added_tokens) {
    int64_t file_id = -1;
    auto parsed = parse_token(entry, &file_id);
    if (!parsed.ok()) return parsed.status();
    AddedToken& t = *parsed;
    if (t.content.empty()) continue;
    if (auto it = v.by_content_.find(t.content); it != v.by_content_.end()) {
      auto same = v.by_id_.find(it->second);
      if (same != v.by_id_.end() && same->second == t) continue;  // already there, unchanged
    }
    TokenId id;
    if (auto it = v.by_content_.find(t.content); it != v.by_content_.end()) {
      id = it->second;
    } else if (auto mid = model.token_to_id(t.content)) {
      id = *mid;
    } else if (v.max_id_ < 0) {
      id = static_cast<TokenId>(vocab_size);
    } else {
      // HF: max added id + 1 once past the model's vocab, else the vocab size.
      id = (v.max_id_ >= vocab_size || vocab_size == 0) ? v.max_id_ + 1
                                                         : static_cast<TokenId>(vocab_size);
    }
    if (id < 0 || id >= (1 << 24)) return Status::error("added token id out of range");
    // Decoding shows a normalized token as the normalizer made it (so that e.g. a
    // byte-level decoder can invert it), as HF's normalized_cache does.
    v.decode_text_.erase(id);
    if (t.normalized && normalizer != nullptr) {
      std::string normed = t.content;
      TESSERA_RETURN_IF_ERROR(normalizer->normalize(&normed));
      if (normed != t.content) v.decode_text_[id] = std::move(normed);
    }
    v.by_content_[t.content] = id;
    if (t.special && !v.special_set_.count(t.content)) {
      special_list.push_back(t);
      v.special_set_.insert(t.content);
    }
    v.by_id_[id] = t;
    if (!v.special_set_.count(t.content)) plain_list.push_back(t);
    v.max_id_ = std::max(v.max_id_, id);
  }
  for (const auto* list : {&special_list, &plain_list}) {
    for (const AddedToken& t : *list) {
      const auto id = v.token_to_id(t.content);
      const TokenId resolved = id ? *id : model.token_to_id(t.content).value_or(-1);
      if (resolved < 0) continue;
      if (!t.normalized) {
        v.raw_trie_.add(t.content, resolved);
      } else {
        std::string content = t.content;
        if (normalizer != nullptr) TESSERA_RETURN_IF_ERROR(normalizer->normalize(&content));
        v.normalized_trie_.add(content, resolved);
      }
    }
  }
  return v;
}

std::optional<TokenId> AddedVocabulary::token_to_id(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string_view> AddedVocabulary::decode_text(TokenId id) const {
  if (auto it = decode_text_.find(id); it != decode_text_.end()) return std::string_view(it->second);
  if (auto it = by_id_.find(id); it != by_id_.end()) return std::string_view(it->second.content);
  return std::nullopt;
}

const AddedToken* AddedVocabulary::token(TokenId id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second;
}

void AddedVocabulary::split(std::string_view text, bool normalized_set,
                            std::vector<Segment>* out) const {
  out->clear();
  const Trie& trie = normalized_set ? normalized_trie_ : raw_trie_;
  size_t start_offset = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (!trie.first_byte[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    int32_t pattern = -1;
    const size_t len = trie.longest_at(text, pos, &pattern);
    if (len == 0) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + len;
    pos = stop;  // the next search resumes after this match, whatever happens to it
    const TokenId id = trie.patterns[static_cast<size_t>(pattern)];
    const AddedToken* tok = token(id);
    if (tok == nullptr) continue;
    if (tok->single_word) {
      const bool start_space = start == 0 || !unicode::is_word_char(char_before(text, start));
      size_t next = stop;
      const bool stop_space = stop == text.size() ||
                              !unicode::is_word_char(unicode::decode_utf8(text, &next));
      if (!start_space || !stop_space) continue;
    }
    if (tok->lstrip) start = std::max(trailing_space_start(text, start), start_offset);
    if (tok->rstrip) stop = leading_space_end(text, stop);
    if (start_offset < start) out->push_back({start_offset, start, -1});
    out->push_back({start, stop, id});
    start_offset = stop;
  }
  if (start_offset < text.size()) out->push_back({start_offset, text.size(), -1});
}

}  // namespace tessera::tokenizer
