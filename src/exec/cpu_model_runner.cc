#include "exec/cpu_model_runner.h"

#include <algorithm>
#include <cstring>

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

void release_logits_above(std::vector<float>* rows, int64_t vocab, int64_t keep_rows) {
  if (rows->capacity() > static_cast<size_t>(std::max<int64_t>(keep_rows, 1) * vocab)) std::vector<float>().swap(*rows);
}

static std::vector<int32_t> eos_ids(const ModelConfig& c) {
  return std::vector<int32_t>(c.eos_token_ids.begin(), c.eos_token_ids.end());
}

CpuModelRunner::CpuModelRunner(Model& model, const KvCacheShape& shape, int32_t num_host_blocks, int32_t max_num_seqs)
    : model_(model), cache_(shape), vocab_size_(model.config().vocab_size), max_num_seqs_(max_num_seqs),
      sampler_(model.config().vocab_size, eos_ids(model.config())) {
  if (num_host_blocks > 0) {
    KvCacheShape host = shape;
    host.num_blocks = num_host_blocks;
    host_tier_ = std::make_unique<KvCache>(host);
  }
}

namespace {

// Every layer's K and V of block `from` in `src` to block `to` in `dst`.
void copy_block(KvCache& src, int32_t from, KvCache& dst, int32_t to) {
  const KvCacheShape& s = src.shape();
  const size_t slab = static_cast<size_t>(s.block_size * s.kv_dim());
  TESSERA_CHECK(from >= 0 && from < src.shape().num_blocks && to >= 0 && to < dst.shape().num_blocks);
  for (int64_t l = 0; l < s.num_layers; ++l) {
    std::memcpy(dst.k(l) + to * slab, src.k(l) + from * slab, slab * sizeof(float));
    std::memcpy(dst.v(l) + to * slab, src.v(l) + from * slab, slab * sizeof(float));
  }
}

}  // namespace

void CpuModelRunner::launch(const SchedulerOutput& out, const RequestLookup& lookup) {
  TESSERA_CHECK_MSG(host_tier_ != nullptr || out.kv_copies.empty(), "KV offload copies without a host tier");
  for (const KvBlockCopy& c : out.kv_copies.stores) copy_block(cache_, c.device_block, *host_tier_, c.host_block);
  for (const KvBlockCopy& c : out.kv_copies.loads) copy_block(*host_tier_, c.host_block, cache_, c.device_block);
  batch_ = ForwardBatch();
  step_ids_.clear();
  step_rows_.assign(out.requests.size(), LogitsRows{});
  const int64_t block_size = cache_.shape().block_size;
  std::vector<int32_t> table;
  for (size_t i = 0; i < out.requests.size(); ++i) {
    const ScheduledRequest& s = out.requests[i];
    const Request* r = lookup(s.id);
    TESSERA_CHECK(r != nullptr);
    table.assign(s.block_ids.begin(), s.block_ids.end());
    const int32_t start = s.num_computed_tokens;
    const int32_t n = s.num_scheduled_tokens;
    TESSERA_CHECK(start + n <= r->num_tokens());
    const int32_t base = static_cast<int32_t>(batch_.num_tokens());
    batch_.add_sequence(r->all_token_ids.data() + start, n, start, table, block_size, /*wants_logits=*/false);
    plan_logits_rows(*r, s, base, &batch_.logits_indices, &step_rows_[i]);
    step_ids_.push_back(s.id);
  }
  logits_.resize(batch_.logits_indices.size() * static_cast<size_t>(vocab_size_));
  if (batch_.num_tokens() > 0) model_.forward(batch_, cache_, logits_.data());
}

void CpuModelRunner::collect(const RequestLookup& lookup, std::vector<RequestStepOutput>* outputs) {
  outputs->assign(step_ids_.size(), RequestStepOutput{});
  for (size_t i = 0; i < step_ids_.size(); ++i) {
    const Request* r = lookup(step_ids_[i]);
    if (r == nullptr || r->status != RequestStatus::kRunning) continue;  // finished while the step ran
    sampler_.finish(*r, step_rows_[i], logits_.data(), &(*outputs)[i]);
  }
  // A long prefill's prompt-logprob rows are hundreds of MB: not kept for the next step.
  release_logits_above(&logits_, vocab_size_, max_num_seqs_);
}

}  // namespace tessera
