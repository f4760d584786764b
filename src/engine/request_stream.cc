#include "engine/request_stream.h"

namespace tessera {

void append_to_output(StreamBatch&& b, RequestOutput* out) {
  for (CompletionDelta& d : b.deltas) {
    CompletionOutput& o = out->outputs.at(static_cast<size_t>(d.index));
    o.text += d.text;
    o.token_ids.insert(o.token_ids.end(), d.token_ids.begin(), d.token_ids.end());
    for (float lp : d.token_logprobs) o.cumulative_logprob = o.cumulative_logprob.value_or(0.0) + lp;
    for (PositionLogprobs& top : d.top_logprobs) o.logprobs.push_back(std::move(top));
    if (!d.finish_reason.empty()) {
      o.finish_reason = d.finish_reason;
      o.stop_token = d.stop_token;
      o.stop_string = d.stop_string;
    }
  }
  for (PositionLogprobs& lp : b.prompt_logprobs) out->prompt_logprobs.push_back(std::move(lp));
  out->prompt_logprob_ranks.insert(out->prompt_logprob_ranks.end(), b.prompt_ranks.begin(), b.prompt_ranks.end());
  if (!b.finished) return;
  out->finished = true;
  if (!b.error.empty()) {
    out->error = b.error;
    out->outputs.clear();
    return;
  }
  out->num_cached_tokens = b.num_cached_tokens;
  const double arrival = out->metrics.arrival_time;
  out->metrics = b.metrics;
  if (out->metrics.arrival_time == 0.0) out->metrics.arrival_time = arrival;
}

}  // namespace tessera
