#include "exec/cpu_model_runner.h"

#include <algorithm>
#include <cstring>

#include "common/check.h"
#include "exec/step_planner.h"

namespace tessera {

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
  const size_t slab = src.block_bytes();
  TESSERA_CHECK(from >= 0 && from < src.shape().num_blocks && to >= 0 && to < dst.shape().num_blocks);
  TESSERA_CHECK(src.dtype() == dst.dtype());
  for (int64_t l = 0; l < s.num_layers; ++l) {
    std::memcpy(static_cast<std::byte*>(dst.k(l)) + to * slab, static_cast<std::byte*>(src.k(l)) + from * slab, slab);
    std::memcpy(static_cast<std::byte*>(dst.v(l)) + to * slab, static_cast<std::byte*>(src.v(l)) + from * slab, slab);
  }
}

}  // namespace

void CpuModelRunner::launch(const SchedulerOutput& out, const RequestLookup& lookup) {
  TESSERA_CHECK_MSG(host_tier_ != nullptr || out.kv_copies.empty(), "KV offload copies without a host tier");
  for (const KvBlockCopy& c : out.kv_copies.stores) copy_block(cache_, c.device_block, *host_tier_, c.host_block);
  for (const KvBlockCopy& c : out.kv_copies.loads) copy_block(*host_tier_, c.host_block, cache_, c.device_block);
  step_ids_.clear();
  for (const ScheduledRequest& s : out.requests) step_ids_.push_back(s.id);
  const StepSizes sizes = step_sizes(out);
  const size_t num_seqs = out.requests.size();
  ForwardBatch& b = batch_;
  b.token_ids.resize(sizes.num_tokens);
  b.positions.resize(sizes.num_tokens);
  b.slot_mapping.resize(sizes.num_tokens);
  b.query_start_loc.resize(num_seqs + 1);
  b.seq_lens.resize(num_seqs);
  b.block_table_indptr.resize(num_seqs + 1);
  b.block_table_ids.resize(sizes.num_block_ids);
  plan_step(out, lookup, cache_.shape().block_size,
            StepInputArrays{.token_ids = b.token_ids.data(),
                            .positions = b.positions.data(),
                            .slot_mapping = b.slot_mapping.data(),
                            .block_table_indptr = b.block_table_indptr.data(),
                            .block_table_ids = b.block_table_ids.data(),
                            .query_start_loc = b.query_start_loc.data(),
                            .seq_lens = b.seq_lens.data()},
            &plan_);
  TESSERA_CHECK_MSG(plan_.pending.empty(), "the CPU runner has no step in flight to take pending inputs from");
  b.logits_indices = plan_.logits_indices;
  logits_.resize(batch_.logits_indices.size() * static_cast<size_t>(vocab_size_));
  if (batch_.num_tokens() > 0) model_.forward(batch_, cache_, logits_.data());
}

void CpuModelRunner::collect(const RequestLookup& lookup, std::vector<RequestStepOutput>* outputs) {
  outputs->assign(step_ids_.size(), RequestStepOutput{});
  for (size_t i = 0; i < step_ids_.size(); ++i) {
    const Request* r = lookup(step_ids_[i]);
    if (r == nullptr || r->status != RequestStatus::kRunning) continue;  // finished while the step ran
    sampler_.finish(*r, plan_.rows[i], logits_.data(), &(*outputs)[i]);
  }
  // A long prefill's prompt-logprob rows are hundreds of MB: not kept for the next step.
  release_logits_above(&logits_, vocab_size_, max_num_seqs_);
}

}  // namespace tessera
