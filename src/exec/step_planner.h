// The one planner of a step's inputs, shared by every backend's runner: from a
// SchedulerOutput it writes each scheduled token's id, position, sequence and KV slot, the
// CSR block tables, and where each request's logits rows are. A runner points the arrays at
// its own storage (the CPU runner's ForwardBatch vectors, the CUDA runner's pinned upload
// buffer) and keeps only what is its own: padding for CUDA graphs, sampling rows, uploads.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/request.h"
#include "exec/model_runner.h"
#include "sched/scheduler_output.h"

namespace tessera {

// What a step's arrays must hold (the caller sizes its storage from it).
struct StepSizes {
  int32_t num_tokens = 0;
  int32_t num_block_ids = 0;
};
StepSizes step_sizes(const SchedulerOutput& out);

// Where plan_step writes; arrays sized by step_sizes (sequences: out.requests.size()).
// Optional arrays may be null.
struct StepInputArrays {
  int32_t* token_ids = nullptr;           // [num_tokens]
  int32_t* positions = nullptr;           // [num_tokens]
  int64_t* slot_mapping = nullptr;        // [num_tokens] block_id * block_size + offset
  int32_t* block_table_indptr = nullptr;  // [num_seqs + 1] CSR over block_table_ids
  int32_t* block_table_ids = nullptr;     // [num_block_ids]
  int32_t* token_seq = nullptr;           // optional [num_tokens]: the sequence of each token
  int32_t* query_start_loc = nullptr;     // optional [num_seqs + 1]: CSR of each sequence's tokens
  int32_t* seq_lens = nullptr;            // optional [num_seqs]: context length after the step
};

// What plan_step returns beside the arrays.
struct StepPlan {
  StepSizes sizes;
  std::vector<int32_t> logits_indices;  // batch tokens whose next-token logits are wanted
  std::vector<LogitsRows> rows;         // per scheduled request: where its rows are
  // Look-ahead inputs (ScheduledRequest::input_pending): the batch index of a token whose id
  // the step in flight samples, and its request. plan_step writes id 0 there.
  std::vector<std::pair<int32_t, RequestId>> pending;
  bool one_token_per_seq = true;  // every sequence schedules at most one token
};

// Plans the step of `out` into `arrays` and `plan` (cleared first; its vectors' storage is
// reused). Every scheduled request must be found by lookup.
void plan_step(const SchedulerOutput& out, const ModelRunner::RequestLookup& lookup, int64_t block_size,
               const StepInputArrays& arrays, StepPlan* plan);

// Rows of logits a step needs for request r scheduled as s: prompt-logprob rows first, then
// the sampling row; appends the batch token index of each to logits_indices. base: the batch
// index of the request's first scheduled token. Shared by every backend's runner.
void plan_logits_rows(const Request& r, const ScheduledRequest& s, int32_t base, std::vector<int32_t>* logits_indices,
                      LogitsRows* rows);

}  // namespace tessera
