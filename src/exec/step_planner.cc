#include "exec/step_planner.h"

#include <algorithm>

#include "common/check.h"

namespace tessera {

void plan_logits_rows(const Request& r, const ScheduledRequest& s, int32_t base, std::vector<int32_t>* logits_indices,
                      LogitsRows* lr) {
  const int32_t start = s.num_computed_tokens;
  const int32_t n = s.num_scheduled_tokens;
  // Prompt logprobs: the token at position p is predicted by the logits at p - 1.
  if (r.params.prompt_logprobs >= 0) {
    const int32_t first = start;
    const int32_t last = std::min(start + n, r.num_prompt_tokens() - 1);  // exclusive
    if (last > first) {
      lr->first_prompt_row = static_cast<int32_t>(logits_indices->size());
      lr->num_prompt_rows = last - first;
      lr->prompt_position = first + 1;
      for (int32_t p = first; p < last; ++p) logits_indices->push_back(base + (p - start));
    }
  }
  if (s.samples) {
    lr->sample_row = static_cast<int32_t>(logits_indices->size());
    logits_indices->push_back(base + n - 1);
  }
}

StepSizes step_sizes(const SchedulerOutput& out) {
  StepSizes z;
  for (const ScheduledRequest& s : out.requests) {
    z.num_tokens += s.num_scheduled_tokens;
    z.num_block_ids += static_cast<int32_t>(s.block_ids.size());
  }
  return z;
}

void plan_step(const SchedulerOutput& out, const ModelRunner::RequestLookup& lookup, int64_t block_size,
               const StepInputArrays& a, StepPlan* plan) {
  plan->sizes = StepSizes{};
  plan->logits_indices.clear();
  plan->rows.assign(out.requests.size(), LogitsRows{});
  plan->pending.clear();
  plan->one_token_per_seq = true;
  int32_t num_tokens = 0, num_block_ids = 0;
  a.block_table_indptr[0] = 0;
  if (a.query_start_loc != nullptr) a.query_start_loc[0] = 0;
  for (size_t i = 0; i < out.requests.size(); ++i) {
    const ScheduledRequest& s = out.requests[i];
    const Request* r = lookup(s.id);
    TESSERA_CHECK(r != nullptr);
    const int32_t start = s.num_computed_tokens, n = s.num_scheduled_tokens;
    // A pending input is the one token past what the request holds (sampled in flight).
    TESSERA_CHECK(start + n <= r->num_tokens() + (s.input_pending ? 1 : 0));
    TESSERA_CHECK(int64_t{start + n} <= static_cast<int64_t>(s.block_ids.size()) * block_size);
    plan->one_token_per_seq = plan->one_token_per_seq && n <= 1;
    const int32_t* ids = r->all_token_ids.data();
    for (int32_t k = 0; k < n; ++k) {
      const int32_t pos = start + k;
      const int32_t t = num_tokens + k;
      if (pos < r->num_tokens()) {
        a.token_ids[t] = ids[pos];
      } else {
        a.token_ids[t] = 0;
        plan->pending.emplace_back(t, s.id);
      }
      a.positions[t] = pos;
      a.slot_mapping[t] = int64_t{s.block_ids[pos / block_size]} * block_size + pos % block_size;
      if (a.token_seq != nullptr) a.token_seq[t] = static_cast<int32_t>(i);
    }
    std::copy(s.block_ids.begin(), s.block_ids.end(), a.block_table_ids + num_block_ids);
    num_block_ids += static_cast<int32_t>(s.block_ids.size());
    a.block_table_indptr[i + 1] = num_block_ids;
    plan_logits_rows(*r, s, num_tokens, &plan->logits_indices, &plan->rows[i]);
    num_tokens += n;
    if (a.query_start_loc != nullptr) a.query_start_loc[i + 1] = num_tokens;
    if (a.seq_lens != nullptr) a.seq_lens[i] = start + n;
  }
  plan->sizes = StepSizes{num_tokens, num_block_ids};
}

}  // namespace tessera
