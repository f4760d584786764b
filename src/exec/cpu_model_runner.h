// CpuModelRunner: the host backend's ModelRunner: one ForwardBatch per step through a
// Model over a host KV cache; every sampling happens on the host from its logits. With KV
// offload, a second KvCache of the same layout is the host tier (host_kv_tier.h); a step's
// block copies run before its forward.
#pragma once

#include <memory>
#include <vector>

#include "backend/forward_batch.h"
#include "exec/model_runner.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace tessera {

class CpuModelRunner : public ModelRunner {
 public:
  // max_num_seqs: the logits rows an ordinary step needs, kept between steps.
  CpuModelRunner(Model& model, const KvCacheShape& shape, int32_t num_host_blocks = 0, int32_t max_num_seqs = 1);

  void execute(const SchedulerOutput& out, const RequestLookup& lookup, std::vector<LogitsRows>* rows) override;
  const float* logits(int32_t row) const override {
    return logits_.data() + static_cast<size_t>(row) * vocab_size_;
  }
  int64_t vocab_size() const override { return vocab_size_; }
  void release_step_memory() override { release_logits_above(&logits_, vocab_size_, max_num_seqs_); }
  KvCache& cache() { return cache_; }

 private:
  Model& model_;
  KvCache cache_;
  std::unique_ptr<KvCache> host_tier_;  // KV offload: [num_host_blocks] blocks, or null
  int64_t vocab_size_;
  int32_t max_num_seqs_;
  ForwardBatch batch_;
  std::vector<float> logits_;  // [rows, vocab_size]
};

}  // namespace tessera
