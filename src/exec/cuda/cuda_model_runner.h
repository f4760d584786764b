// CudaModelRunner: the CUDA backend's ModelRunner. Per step it plans the inputs once on the
// host (tokens, positions, slot mapping, CSR block tables, logits rows) into one pinned
// buffer, sends it in one copy, runs CudaModel over the device KV cache, samples on the
// device the rows that need no host-side logits processing (their logprobs too), and copies
// back only their tokens (and top logprobs) plus the logits rows the host still has to
// process (penalties, logit bias, min_tokens, prompt logprobs). With async scheduling a second step is queued behind the first, its
// pending input tokens copied on the device from the first step's samples; the host-side
// step buffers come in two sets for it.
#pragma once

#include <cuda_runtime_api.h>

#include <deque>
#include <map>
#include <unordered_map>
#include <memory>
#include <vector>

#include "config/engine_config.h"
#include "exec/cuda/cuda_model.h"
#include "exec/cuda/kv_offload_copier.h"
#include "exec/host_sampler.h"
#include "exec/model_runner.h"
#include "exec/step_planner.h"
#include "sample/logit_adjustments.h"
#include "sample/sampling_row.h"

namespace tessera::cuda {

class CudaModelRunner : public ModelRunner {
 public:
  ~CudaModelRunner() override;
  // Allocates the step buffers for config's token and sequence budgets; with
  // config.device.use_cuda_graphs, decode steps replay CUDA graphs captured per batch-size bucket.
  static Result<std::unique_ptr<CudaModelRunner>> create(std::unique_ptr<CudaModel> model, const EngineConfig& config);
  // Allocates the KV cache the plan sized, and its host tier when the plan has one (call
  // once, before the first step).
  Status allocate_kv(const KvCachePlan& plan);
  // Before the first request (unless Tuning::cuda_warmup is off): one decode step of padding
  // tokens per graph bucket, which captures every graph (and tunes the GEMMs of up to
  // Tuning::gemm_tune_rows rows first) so that serving never pays for it (its cost and
  // gain: docs/benchmarks.md).
  Status warm_up();

  // Plans the step and queues it on the stream; collect waits for the device, and samples
  // the rows the device did not on the host.
  void launch(const SchedulerOutput& out, const RequestLookup& lookup) override;
  void collect(const RequestLookup& lookup, std::vector<RequestStepOutput>* outputs) override;
  bool launches_async() const override { return true; }
  bool tokens_stay_on_device() const override { return last_tokens_on_device_; }
  int64_t vocab_size() const { return model_->config().vocab_size; }
  cudaStream_t stream() const { return stream_; }
  const CudaModel& model() const { return *model_; }

  // Whether a request's next token can be picked on the device (no host-side processing).
  // num_pending: its tokens sampled by steps in flight, not appended yet.
  static bool samples_on_device(const Request& r, int32_t num_pending = 0);

 private:
  CudaModelRunner() = default;
  // The two halves of a step (launch, collect) and what passes from one to the other.
  Status enqueue_step(const SchedulerOutput& out, const RequestLookup& lookup);
  Status finish_step(const RequestLookup& lookup, std::vector<RequestStepOutput>* outputs);
  struct Launched {
    std::vector<RequestId> ids;   // the scheduled requests
    std::vector<LogitsRows> rows;  // and where their rows are
    std::vector<bool> host_row;  // per logits row: the host processes it
    std::vector<int32_t> row_logprobs;  // per logits row: top logprobs computed on the device (0: none)
    int top_k = 0;                      // columns of this step's device logprobs
    bool queued = false;         // device work was queued (a step with tokens)
    int64_t bucket = 0;          // the graph bucket, 0 for an eager step
    bool decode = false;
    int slot = 0;      // which set of host-side step buffers it used
    int64_t seq = 0;   // launch count
    double t_start = 0, t_planned = 0, t_enqueued = 0;  // profile
    double mask_ms = 0;                                  // profile: grammar masks' share of planning
  };
  std::deque<Launched> launched_;  // oldest first, at most two
  int64_t num_launched_ = 0;
  int cur_ = 0;  // the buffer set of the step being planned
  bool last_tokens_on_device_ = false;  // tokens_stay_on_device() of the last launch
  // Rows of dev_next_ the last launched step sampled on the device, by request: where a
  // look-ahead step's pending inputs are.
  std::unordered_map<RequestId, int32_t> sample_row_of_;
  // The device work of one step over the inputs in dev_in_: forward, LM head and greedy
  // sampling of the first min(num_rows, max_logit_rows) rows (what a graph captures).
  Status forward_and_sample(const CudaStep& step, int64_t num_rows);
  // Fills host inputs [num_tokens, bucket) with padding tokens: sequence pad_seq at
  // position 0 over the null block, greedy rows. Returns the new count of block ids.
  int32_t pad_to_bucket(int64_t num_tokens, int64_t bucket, int32_t pad_seq, int32_t num_block_ids);
  // The step over the device copy of the inputs, for num_tokens tokens.
  CudaStep device_step(int64_t num_tokens, bool one_token_per_seq) const;
  // The smallest graph bucket holding n decode tokens; 0 when none does.
  int64_t graph_bucket(int64_t n) const;
  // Replays (capturing on first use) the decode graph of `bucket` tokens.
  Status launch_graph(const CudaStep& step, int64_t bucket);
  // Offsets (in int32 elements) of the sections of the step-input buffer.
  struct Layout {
    size_t token_ids, positions, token_seq, logits_indices, slot_mapping, indptr, pending, adjust, mask_rows, block_ids,
        capacity;
  };

  std::unique_ptr<CudaModel> model_;
  cudaStream_t stream_ = nullptr;
  int num_sms_ = 1;
  int64_t max_tokens_ = 0;
  int64_t max_logit_rows_ = 0;  // rows of device logits per LM-head chunk
  int32_t max_model_len_ = 0;
  bool use_graphs_ = false;
  int attention_split_keys_ = 64;  // Tuning's choices for every step's attention
  bool rope_in_attention_ = true;
  int prefill_tile_rows_ = 0;
  int64_t tune_rows_ = 0;  // buckets up to this size: an eager run precedes the capture (GEMM timing)
  std::vector<int64_t> graph_buckets_;            // decode batch sizes with a graph, ascending
  // A decode graph: the executable, the graph it came from and, with KV offload, its wait
  // node per layer (re-pointed at each replay's event set).
  struct Graph {
    cudaGraphExec_t exec = nullptr;
    cudaGraph_t graph = nullptr;
    std::vector<cudaGraphNode_t> kv_waits;
  };
  std::map<int64_t, Graph> graphs_;  // by bucket, captured on first use
  Layout layout_{};
  StepPlan plan_;                          // the step being planned (step_planner.h)
  std::vector<int32_t> query_start_loc_;  // its sequences' token ranges, for the attention plan
  PinnedBuffer<int32_t> host_in_[2];  // step inputs, Layout sections; one set per step in flight
  DeviceBuffer<int32_t> dev_in_;
  CudaActivations act_;
  CudaKvCache kv_;
  KvOffloadCopier offload_;  // KV offload's host tier and copies (off without one)
  DeviceBuffer<float> dev_logits_;  // [max_logit_rows, vocab]
  PinnedBuffer<SamplingRow> host_sampling_[2];  // [max_tokens] parameters of each logits row
  DeviceBuffer<SamplingRow> dev_sampling_;
  DeviceBuffer<int32_t> dev_next_;  // [max_tokens] the sampled token of every row
  PinnedBuffer<int32_t> host_next_[2];
  // Logprobs of device-sampled rows (top_logprobs): [max_logit_rows, kMaxTopLogprobs] ids and
  // values, and the sampled token's logprob per row; the host copies per buffer set.
  DeviceBuffer<int32_t> dev_top_ids_;
  DeviceBuffer<float> dev_top_lp_, dev_chosen_lp_;
  // Logit adjustments of device-sampled rows (bias, masks, penalties), indexed per logits row
  // by the step input's `adjust` section; rows whose lists do not fit go to the host.
  static constexpr size_t kMaxAdjustments = size_t{1} << 18;
  PinnedBuffer<LogitAdjustment> host_adjust_[2];
  DeviceBuffer<LogitAdjustment> dev_adjust_;
  // Structured outputs' grammar masks of device-sampled rows ([max_logit_rows, (vocab + 31) /
  // 32] bits), indexed per logits row by the step input's `mask_rows` section.
  PinnedBuffer<uint32_t> host_bitmask_[2];
  double mask_us_ = 2.0;  // a grammar mask's fill time, running mean (picks serial or parallel fill)
  DeviceBuffer<uint32_t> dev_bitmask_;
  std::vector<int32_t> eos_token_ids_;
  std::unique_ptr<HostSampler> host_sampler_;  // rows the device does not sample
  PinnedBuffer<int32_t> host_top_ids_[2];
  PinnedBuffer<float> host_top_lp_[2], host_chosen_lp_[2];
  cudaEvent_t step_done_[2] = {nullptr, nullptr};  // per buffer set: its step's results are on the host
  std::vector<float> host_logits_;  // [rows, vocab]; only the rows the host processes are filled

  // --profile cuda: where a step's time goes (host planning, device, the device's
  // idle time before it), averaged over decode-graph steps and other steps, printed to stderr.
  struct Profile {
    bool enabled = false;
    static constexpr int kEvents = 4;  // by launch count: a step and the one before stay readable
    cudaEvent_t begin[kEvents] = {}, end[kEvents] = {};
    struct Sums {
      int64_t steps = 0;
      double plan_ms = 0, mask_ms = 0, enqueue_ms = 0, device_ms = 0, wait_ms = 0, idle_ms = 0;
    } graph, eager;
    int64_t last_seq = -1;  // launch count of the last profiled step
    void report() const;
  } profile_;
  std::unique_ptr<OpTimer> op_timer_;  // --profile ops (graphs off)
};

}  // namespace tessera::cuda
