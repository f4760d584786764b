#include "engine/output_processor.h"

#include <algorithm>

namespace tessera {

CompletionTracker::CompletionTracker(const tokenizer::Tokenizer* tok, const SamplingParams& params,
                                     std::span<const int32_t> prompt_ids, int64_t index)
    : index_(index), stops_(params.stop, params.include_stop_str_in_output),
      include_stop_(params.include_stop_str_in_output) {
  if (tok != nullptr) {
    const size_t context = std::min(prompt_ids.size(), tokenizer::IncrementalDetokenizer::kPromptContext);
    detok_ = std::make_unique<tokenizer::IncrementalDetokenizer>(*tok, params.skip_special_tokens,
                                                                 prompt_ids.subspan(prompt_ids.size() - context));
  }
  for (const std::string& s : params.stop) hold_back_ = std::max(hold_back_, s.empty() ? 0 : s.size() - 1);
}

void CompletionTracker::emit_until(size_t end, CompletionDelta* d) {
  if (end <= sent_) return;
  d->text.append(text_, sent_, end - sent_);
  sent_ = end;
}

bool CompletionTracker::add(const EngineStepOutput& o, CompletionDelta* d) {
  d->index = index_;
  if (!o.new_token || finished_) return false;
  ++num_tokens_;
  d->token_ids.push_back(*o.new_token);
  if (o.new_logprobs) {
    d->token_logprobs.push_back(o.new_token_logprob);
    d->top_logprobs.push_back(*o.new_logprobs);
  }
  if (!detok_) return false;
  // As vLLM's: the token that stopped the request is not text unless asked for (it shows with
  // skip_special_tokens false, or as a stop_token_ids token).
  if (o.stop_token && !include_stop_) return false;
  auto piece = detok_->step(*o.new_token);
  if (piece.ok()) text_ += *piece;
  if (!stops_.empty() && stops_.check(text_)) return true;
  // Stream all but what a stop string could still claim, ending on a character boundary.
  size_t end = text_.size() > hold_back_ ? text_.size() - hold_back_ : 0;
  while (end > sent_ && end < text_.size() && (static_cast<unsigned char>(text_[end]) & 0xC0) == 0x80) --end;
  emit_until(end, d);
  return false;
}

void CompletionTracker::finish(RequestStatus status, std::optional<int32_t> stop_token, CompletionDelta* d) {
  d->index = index_;
  if (finished_) return;
  finished_ = true;
  if (detok_ && !stops_.matched()) {
    auto rest = detok_->finish();
    if (rest.ok()) text_ += *rest;
    // The held-back tail can still hold a stop string the last token completed.
    if (!stops_.empty()) stops_.check(text_);
  }
  if (stops_.matched()) {
    const std::string final_text = stops_.truncate(text_);
    // Emitted text never reaches past a stop string (see hold_back_), so final_text extends it.
    if (final_text.size() > sent_) d->text.append(final_text, sent_, std::string::npos);
    sent_ = final_text.size();
    d->stop_string = stops_.matched_string();
    d->finish_reason = "stop";
    return;
  }
  emit_until(text_.size(), d);
  d->finish_reason = finish_reason(status);
  d->stop_token = stop_token;
}

}  // namespace tessera
