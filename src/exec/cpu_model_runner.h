// CpuModelRunner: the host backend's ModelRunner: one ForwardBatch per step through a
// Model over a host KV cache, its logits rows sampled by the HostSampler. With KV
// offload, a second KvCache of the same layout is the host tier (host_kv_tier.h); a step's
// block copies run before its forward.
#pragma once

#include <memory>
#include <vector>

#include "backend/forward_batch.h"
#include "exec/host_sampler.h"
#include "exec/model_runner.h"
#include "exec/step_planner.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace tessera {

class CpuModelRunner : public ModelRunner {
 public:
  // max_num_seqs: the logits rows an ordinary step needs, kept between steps.
  CpuModelRunner(Model& model, const KvCacheShape& shape, int32_t num_host_blocks = 0, int32_t max_num_seqs = 1);

  // Runs the forward; collect samples its rows.
  void launch(const SchedulerOutput& out, const RequestLookup& lookup) override;
  void collect(const RequestLookup& lookup, std::vector<RequestStepOutput>* outputs) override;
  KvCache& cache() { return cache_; }

 private:
  Model& model_;
  KvCache cache_;
  std::unique_ptr<KvCache> host_tier_;  // KV offload: [num_host_blocks] blocks, or null
  int64_t vocab_size_;
  int32_t max_num_seqs_;
  HostSampler sampler_;
  ForwardBatch batch_;
  std::vector<float> logits_;  // [rows, vocab_size]
  std::vector<RequestId> step_ids_;  // the launched step's requests
  StepPlan plan_;                    // and where their rows are
};

}  // namespace tessera
