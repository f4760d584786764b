#include "tokenizer/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include "tokenizer/utf8.h"

namespace tessera::tokenizer {

SentencePieceTokenizer::SentencePieceTokenizer() : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}
SentencePieceTokenizer::~SentencePieceTokenizer() = default;

Result<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::load(const std::string& path) {
  std::unique_ptr<SentencePieceTokenizer> t(new SentencePieceTokenizer());
  t->source_ = path;
  const auto status = t->sp_->Load(path);
  if (!status.ok()) {
    return Status::error(path + ": not a SentencePiece model: " + std::string(status.message()));
  }
  const int n = t->sp_->GetPieceSize();
  if (n <= 0) return Status::error(path + ": SentencePiece model has no pieces");
  t->entries_.resize(static_cast<size_t>(n));
  std::vector<SpecialTokenSpec> specs;
  for (int id = 0; id < n; ++id) {
    VocabEntry& e = t->entries_[static_cast<size_t>(id)];
    e.text = t->sp_->IdToPiece(id);
    e.score = t->sp_->GetScore(id);
    e.attr = t->sp_->IsControl(id)   ? TokenAttr::kControl
             : t->sp_->IsUnknown(id) ? TokenAttr::kUnknown
             : t->sp_->IsByte(id)    ? TokenAttr::kByte
             : t->sp_->IsUnused(id)  ? TokenAttr::kUnused
                                     : TokenAttr::kNormal;
    t->piece_to_id_.emplace(e.text, id);
    // The library never produces control pieces from text; match them as added tokens.
    // (User-defined pieces it matches itself.)
    if (e.attr == TokenAttr::kControl && !e.text.empty()) specs.push_back({e.text, id, false, false});
  }
  t->matcher_ = SpecialTokenMatcher(std::move(specs));
  // The normalizer spec is not exposed by the library's API; a dummy prefix shows up as a
  // leading ▁ on the first piece of "a".
  const auto pieces = t->sp_->EncodeAsPieces("a");
  t->add_dummy_prefix_ = !pieces.empty() && pieces[0].rfind("\xE2\x96\x81", 0) == 0;

  auto valid = [n](int id) { return id >= 0 && id < n ? std::optional<TokenId>(id) : std::nullopt; };
  t->special_.bos_id = valid(t->sp_->bos_id());
  t->special_.eos_id = valid(t->sp_->eos_id());
  t->special_.pad_id = valid(t->sp_->pad_id());
  t->special_.unk_id = valid(t->sp_->unk_id());
  if (t->special_.bos_id) t->special_.bos_token = t->entries_[static_cast<size_t>(*t->special_.bos_id)].text;
  if (t->special_.eos_id) t->special_.eos_token = t->entries_[static_cast<size_t>(*t->special_.eos_id)].text;
  return t;
}

Result<std::vector<TokenId>> SentencePieceTokenizer::encode_ordinary(std::string_view text) const {
  if (!is_valid_utf8(text)) return Status::error("encode: input is not valid UTF-8");
  std::vector<int> ids;
  const auto status = sp_->Encode(text, &ids);
  if (!status.ok()) return Status::error(source_ + ": encode failed: " + std::string(status.message()));
  return std::vector<TokenId>(ids.begin(), ids.end());
}

Result<std::vector<TokenId>> SentencePieceTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  if (!is_valid_utf8(text)) return Status::error("encode: input is not valid UTF-8");
  std::vector<TokenId> out;
  if (add_special_tokens && special_.bos_id) out.push_back(*special_.bos_id);
  for (const TextFragment& f : matcher_.split(text)) {
    if (f.token) {
      out.push_back(*f.token);
      continue;
    }
    auto ids = encode_ordinary(f.text);
    TESSERA_RETURN_IF_ERROR(ids);
    out.insert(out.end(), ids->begin(), ids->end());
  }
  return out;
}

Result<std::string> SentencePieceTokenizer::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  TESSERA_RETURN_IF_ERROR(check_ids(ids, entries_.size()));
  return decode_metaspace(entries_, ids, skip_special_tokens, add_dummy_prefix_);
}

std::optional<std::string> SentencePieceTokenizer::id_to_token(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= entries_.size()) return std::nullopt;
  return entries_[static_cast<size_t>(id)].text;
}

std::optional<TokenId> SentencePieceTokenizer::token_to_id(std::string_view token) const {
  return find_piece(piece_to_id_, token);
}

bool SentencePieceTokenizer::is_special(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= entries_.size()) return false;
  return is_special_attr(entries_[static_cast<size_t>(id)].attr);
}

}  // namespace tessera::tokenizer
