#include "tokenizer/incremental_detokenizer.h"

#include <algorithm>

#include "tokenizer/utf8.h"
#include "tokenizer/vocab_common.h"

namespace tessera::tokenizer {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens,
                                               std::span<const TokenId> prompt_ids)
    : tok_(tokenizer), skip_special_(skip_special_tokens) {
  // vLLM: the first window starts a few prompt tokens back; the prompt is never emitted.
  const size_t keep = std::min(prompt_ids.size(), kPromptContext);
  ids_.assign(prompt_ids.end() - static_cast<std::ptrdiff_t>(keep), prompt_ids.end());
  num_prompt_ = ids_.size();
  prefix_offset_ = 0;
  read_offset_ = num_prompt_;
}

bool IncrementalDetokenizer::is_byte_piece(TokenId id) const {
  auto piece = tok_.id_to_token(id);
  return piece && parse_byte_piece(*piece).has_value();
}

Result<std::string> IncrementalDetokenizer::step(TokenId id) {
  if (id < 0 || static_cast<size_t>(id) >= tok_.vocab_size()) {
    return Status::error("detokenize: token id " + std::to_string(id) + " is out of range (vocabulary size " +
                         std::to_string(tok_.vocab_size()) + ")");
  }
  ids_.push_back(id);
  // HF's ByteFallback decodes a run of <0xXX> pieces as a whole and replaces every byte of
  // an invalid run, so text from a run is final only once the run ends.
  if (is_byte_piece(id)) return std::string();
  const std::span<const TokenId> all(ids_);
  auto prefix = tok_.decode(all.subspan(prefix_offset_, read_offset_ - prefix_offset_), skip_special_);
  TESSERA_RETURN_IF_ERROR(prefix);
  auto window = tok_.decode(all.subspan(prefix_offset_), skip_special_);
  TESSERA_RETURN_IF_ERROR(window);
  const std::string& p = *prefix;
  const std::string& w = *window;
  // A window that no longer extends its prefix (HF's ByteFallback rewrites a whole byte run
  // once it turns invalid) is held until it does, or until finish().
  if (w.size() <= p.size() || w.compare(0, p.size(), p) != 0) return std::string();
  const std::string_view tail = std::string_view(w).substr(p.size());
  if (tail.size() >= kReplacementChar.size() && tail.substr(tail.size() - kReplacementChar.size()) == kReplacementChar) {
    return std::string();
  }
  if (utf8_incomplete_tail(tail) > 0) return std::string();
  std::string delta(tail);
  text_ += delta;
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  return delta;
}

Result<std::string> IncrementalDetokenizer::finish() {
  const std::span<const TokenId> all(ids_);
  auto prefix = tok_.decode(all.subspan(prefix_offset_, read_offset_ - prefix_offset_), skip_special_);
  TESSERA_RETURN_IF_ERROR(prefix);
  auto window = tok_.decode(all.subspan(prefix_offset_), skip_special_);
  TESSERA_RETURN_IF_ERROR(window);
  std::string delta;
  if (window->size() > prefix->size() && window->compare(0, prefix->size(), *prefix) == 0) {
    delta = utf8_lossy(std::string_view(*window).substr(prefix->size()));
  }
  text_ += delta;
  prefix_offset_ = read_offset_ = ids_.size();
  return delta;
}

}  // namespace tessera::tokenizer
