// What the scheduler decided for one step: plain data the model runner turns into a
// ForwardBatch. Tokens of request r this step: all_token_ids[num_computed_tokens,
// num_computed_tokens + num_scheduled_tokens), written through its block table.
#pragma once

#include <cstdint>
#include <vector>

#include "common/ids.h"
#include "kv/kv_block_copy.h"

namespace tessera {

struct ScheduledRequest {
  RequestId id;
  int32_t num_computed_tokens = 0;   // before this step
  int32_t num_scheduled_tokens = 0;  // this step
  std::vector<int32_t> block_ids;    // the request's whole block table
  // True when this step reaches the last token: its logits are sampled.
  bool samples = false;
  // Look-ahead steps: the scheduled token is the one the request sampled in the step
  // before, not appended yet (it is at position num_computed_tokens == num_tokens()); the
  // runner takes it from that step's results on the device.
  bool input_pending = false;
};

struct SchedulerOutput {
  std::vector<ScheduledRequest> requests;  // running requests first, then new admissions
  int32_t total_num_scheduled_tokens = 0;
  std::vector<RequestId> preempted;  // freed this step; they wait and recompute
  // A look-ahead schedule that ran out of KV blocks (it never preempts): the next step
  // should be scheduled once the step in flight is done, with preemption.
  bool look_ahead_stalled = false;
  // KV offload (host_kv_tier.h): block copies to do before this step's forward.
  KvCopies kv_copies;
  bool empty() const { return requests.empty(); }
};

}  // namespace tessera
