// What the scheduler decided for one step: plain data the model runner turns into a
// ForwardBatch. Tokens of request r this step: all_token_ids[num_computed_tokens,
// num_computed_tokens + num_scheduled_tokens), written through its block table.
#pragma once

#include <cstdint>
#include <vector>

#include "common/ids.h"

namespace tessera {

struct ScheduledRequest {
  RequestId id;
  int32_t num_computed_tokens = 0;   // before this step
  int32_t num_scheduled_tokens = 0;  // this step
  std::vector<int32_t> block_ids;    // the request's whole block table
  // True when this step reaches the last known token: its logits are sampled.
  bool samples = false;
};

struct SchedulerOutput {
  std::vector<ScheduledRequest> requests;  // running requests first, then new admissions
  int32_t total_num_scheduled_tokens = 0;
  std::vector<RequestId> preempted;  // freed this step; they wait and recompute
  bool empty() const { return requests.empty(); }
};

}  // namespace tessera
