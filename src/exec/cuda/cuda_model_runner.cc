#include "exec/cuda/cuda_model_runner.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <cstdio>
#include <cstdlib>

#include "backend/cuda/gemv.h"
#include "backend/cuda/sampling.h"
#include "common/check.h"
#include "exec/step_planner.h"
#include "sample/token_sampler.h"

namespace tessera::cuda {

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void CudaModelRunner::Profile::report() const {
  for (const auto& [name, s] : {std::pair{"decode graph", graph}, std::pair{"eager", eager}}) {
    if (s.steps == 0) continue;
    const double n = static_cast<double>(s.steps);
    std::fprintf(stderr,
                 "tessera: CUDA profile, %s steps: %lld; per step: host planning %.3f ms, enqueue %.3f ms, device "
                 "%.3f ms, host wait %.3f ms, device idle before it %.3f ms\n",
                 name, static_cast<long long>(s.steps), s.plan_ms / n, s.enqueue_ms / n, s.device_ms / n, s.wait_ms / n,
                 s.idle_ms / n);
    if (s.mask_ms > 0) std::fprintf(stderr, "tessera: CUDA profile, %s steps: grammar masks %.3f ms of the planning\n", name, s.mask_ms / n);
  }
}

CudaModelRunner::~CudaModelRunner() {
  if (op_timer_) {
    op_timer_->report(stderr);
    model_->set_timer(nullptr);
  }
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (profile_.enabled) {
    profile_.report();
    for (int i = 0; i < Profile::kEvents; ++i) {
      cudaEventDestroy(profile_.begin[i]);
      cudaEventDestroy(profile_.end[i]);
    }
  }
  for (cudaEvent_t e : step_done_) {
    if (e != nullptr) cudaEventDestroy(e);
  }
  for (auto& [bucket, g] : graphs_) {
    cudaGraphExecDestroy(g.exec);
    cudaGraphDestroy(g.graph);
  }
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Result<std::unique_ptr<CudaModelRunner>> CudaModelRunner::create(std::unique_ptr<CudaModel> model,
                                                                 const EngineConfig& config) {
  auto r = std::unique_ptr<CudaModelRunner>(new CudaModelRunner());
  r->model_ = std::move(model);
  const ModelConfig& c = r->model_->config();
  TESSERA_CUDA_TRY(cudaStreamCreateWithFlags(&r->stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  int device = 0;
  TESSERA_CUDA_TRY(cudaGetDevice(&device), "cudaGetDevice");
  TESSERA_CUDA_TRY(cudaDeviceGetAttribute(&r->num_sms_, cudaDevAttrMultiProcessorCount, device), "device attributes");
  const SchedulerConfig& sc = config.scheduler;
  const int32_t max_model_len = sc.max_model_len;
  r->max_tokens_ = std::max<int64_t>(sc.max_num_batched_tokens, sc.max_num_seqs);
  r->max_logit_rows_ = std::max<int64_t>(1, sc.max_num_seqs);
  r->max_model_len_ = max_model_len;
  r->use_graphs_ = config.device.use_cuda_graphs;
  // cuBLASLt tuning of the decode MLP's shapes (Tuning::gemm_tune_rows; docs/benchmarks.md
  // has what larger bounds cost and gain).
  r->tune_rows_ = config.tuning.gemm_tune_rows;
  r->model_->set_gemm_tuning(r->tune_rows_);
  r->model_->set_tuning(config.tuning);
  r->attention_split_keys_ = config.tuning.attention_split_keys;
  r->rope_in_attention_ = config.tuning.rope_in_attention;
  r->prefill_tile_rows_ = config.tuning.prefill_tile_rows;
  // vLLM's capture sizes: 1, 2, 4, then every 8, up to the sequence budget.
  for (int64_t b : {1, 2, 4}) {
    if (b <= sc.max_num_seqs) r->graph_buckets_.push_back(b);
  }
  for (int64_t b = 8; b <= sc.max_num_seqs; b += 8) r->graph_buckets_.push_back(b);
  if (r->graph_buckets_.back() < sc.max_num_seqs) r->graph_buckets_.push_back(sc.max_num_seqs);
  const size_t t = static_cast<size_t>(r->max_tokens_);
  const size_t seqs = static_cast<size_t>(sc.max_num_seqs);
  const size_t blocks_per_seq = static_cast<size_t>((max_model_len + config.cache.block_size - 1) / config.cache.block_size);
  Layout& l = r->layout_;
  l.token_ids = 0;
  l.positions = t;
  l.token_seq = 2 * t;
  l.logits_indices = 3 * t;
  l.slot_mapping = 4 * t;  // int64: two int32 slots each, 8-byte aligned (t is counted in int32s)
  l.indptr = 6 * t;
  l.pending = l.indptr + seqs + 2;  // + the padding sequence of graph batches; then 2 ints per sequence
  l.adjust = l.pending + 2 * seqs;  // per logits row: where its adjustments start and end (t + 1)
  l.mask_rows = l.adjust + t + 1;   // per logits row: its grammar's bitmask row, or -1
  l.block_ids = (l.mask_rows + t + 31) / 32 * 32;
  l.capacity = l.block_ids + seqs * blocks_per_seq + 1;
  // [prefill attention plan] the last attention_plan_ints(max_tokens) ints: plan_attention's
  // tiles of prefill runs (filled in run).
  l.capacity += attention_plan_ints(r->max_tokens_);
  const size_t top = static_cast<size_t>(r->max_logit_rows_) * kMaxTopLogprobs;
  const size_t rows = static_cast<size_t>(r->max_logit_rows_);
  const size_t mask_words = static_cast<size_t>((c.vocab_size + 31) / 32);
  for (int set = 0; set < 2; ++set) {  // the host side of a step, per step in flight
    if (Status s = r->host_in_[set].allocate(l.capacity, "step inputs"); !s.ok()) return s;
    if (Status s = r->host_sampling_[set].allocate(t, "sampling parameters"); !s.ok()) return s;
    if (Status s = r->host_next_[set].allocate(t, "sampled tokens"); !s.ok()) return s;
    if (Status s = r->host_adjust_[set].allocate(kMaxAdjustments, "logit adjustments"); !s.ok()) return s;
    if (Status s = r->host_top_ids_[set].allocate(top, "logprobs"); !s.ok()) return s;
    if (Status s = r->host_top_lp_[set].allocate(top, "logprobs"); !s.ok()) return s;
    if (Status s = r->host_chosen_lp_[set].allocate(rows, "logprobs"); !s.ok()) return s;
    if (Status s = r->host_bitmask_[set].allocate(rows * mask_words, "grammar masks"); !s.ok()) return s;
    TESSERA_CUDA_TRY(cudaEventCreateWithFlags(&r->step_done_[set], cudaEventDisableTiming), "cudaEventCreate");
  }
  if (Status s = r->dev_in_.allocate(l.capacity, "step inputs"); !s.ok()) return s;
  if (Status s = r->dev_adjust_.allocate(kMaxAdjustments, "logit adjustments"); !s.ok()) return s;
  if (Status s = r->dev_top_ids_.allocate(top, "logprobs"); !s.ok()) return s;
  if (Status s = r->dev_top_lp_.allocate(top, "logprobs"); !s.ok()) return s;
  if (Status s = r->dev_chosen_lp_.allocate(rows, "logprobs"); !s.ok()) return s;
  if (Status s = r->dev_bitmask_.allocate(rows * mask_words, "grammar masks"); !s.ok()) return s;
  for (int64_t id : c.eos_token_ids) r->eos_token_ids_.push_back(static_cast<int32_t>(id));
  r->host_sampler_ = std::make_unique<HostSampler>(c.vocab_size, r->eos_token_ids_);
  // The largest attention workspace any token count up to the budget asks for.
  size_t workspace = 0;
  for (int64_t n = 1; n <= r->max_tokens_; ++n) {
    const int splits = attention_num_splits(n, c.num_key_value_heads, r->num_sms_, max_model_len);
    workspace = std::max(workspace, attention_workspace_bytes(n, c.num_attention_heads, c.head_dim, splits));
  }
  if (Status s = r->act_.allocate(c, r->max_tokens_, r->max_tokens_, workspace); !s.ok()) return s;
  if (Status s = r->dev_logits_.allocate(static_cast<size_t>(r->max_logit_rows_ * c.vocab_size), "logits"); !s.ok()) {
    return s;
  }
  if (Status s = r->dev_next_.allocate(t, "sampled tokens"); !s.ok()) return s;
  if (Status s = r->dev_sampling_.allocate(t, "sampling parameters"); !s.ok()) return s;
  if (config.profiling.cuda || config.profiling.ops) {
    r->profile_.enabled = true;
    for (int i = 0; i < Profile::kEvents; ++i) {
      TESSERA_CUDA_TRY(cudaEventCreate(&r->profile_.begin[i]), "cudaEventCreate");
      TESSERA_CUDA_TRY(cudaEventCreate(&r->profile_.end[i]), "cudaEventCreate");
    }
    if (config.profiling.ops) {  // per-op times need eager steps
      r->op_timer_ = std::make_unique<OpTimer>();
      r->model_->set_timer(r->op_timer_.get());
      r->use_graphs_ = false;
    }
  }
  return r;
}

Status CudaModelRunner::allocate_kv(const KvCachePlan& plan) {
  const KvCacheShape& s = plan.shape;
  const KvDtype want = model_->dtype() == DType::kF16 ? KvDtype::kFloat16 : KvDtype::kBfloat16;
  if (s.dtype != want) {
    return Status::error(std::string("the CUDA KV cache holds the compute dtype: plan it as ") + kv_dtype_name(want));
  }
  kv_.block_size = s.block_size;
  kv_.layer_elems = s.num_blocks * s.block_size * s.kv_dim();
  if (Status st = kv_.storage.allocate(static_cast<size_t>(2 * s.num_layers * kv_.layer_elems), "the KV cache");
      !st.ok()) {
    return st;
  }
  // The host tier of the prefix cache: a block's 2 x layers slabs (K, V of each layer)
  // contiguous.
  if (Status st = offload_.init(plan.num_host_blocks, s.num_layers, s.block_size * s.kv_dim()); !st.ok()) return st;
  // Unwritten slots are never read, but zeros keep stray reads finite.
  return cuda_status(cudaMemsetAsync(kv_.storage.get(), 0, kv_.storage.size() * sizeof(Elem16), stream_), "KV cache");
}

bool CudaModelRunner::samples_on_device(const Request& r, int32_t num_pending) {
  const SamplingParams& p = r.params;
  if (p.logprobs > kMaxTopLogprobs || !p.logprob_token_ids.empty()) return false;

  // Logprobs are those of the raw logits, which the adjustments change in place: such rows
  // go to the host.
  const bool adjusts = !p.logit_bias.empty() || !p.bad_words_token_ids.empty() || !p.allowed_token_ids.empty() ||
                       adjustments_read_output(p) || r.constraint != nullptr ||
                       r.num_output_tokens() + num_pending < p.min_tokens;
  return !(adjusts && p.logprobs > 0);
}

// A failed kernel leaves the device context unusable: both halves stop with the reason.
void CudaModelRunner::launch(const SchedulerOutput& out, const RequestLookup& lookup) {
  const Status s = enqueue_step(out, lookup);
  TESSERA_CHECK_MSG(s.ok(), ("CUDA step failed: " + s.message()).c_str());
}

void CudaModelRunner::collect(const RequestLookup& lookup, std::vector<RequestStepOutput>* outputs) {
  const Status s = finish_step(lookup, outputs);
  TESSERA_CHECK_MSG(s.ok(), ("CUDA step failed: " + s.message()).c_str());
}

Status CudaModelRunner::enqueue_step(const SchedulerOutput& out, const RequestLookup& lookup) {
  TESSERA_CHECK_MSG(launched_.size() < 2, "at most two CUDA steps in flight");
  // A step planned behind another uses the other set of host buffers: the first one's
  // copies may not have run yet.
  cur_ = static_cast<int>(num_launched_ % 2);
  Launched& st = launched_.emplace_back();
  st.slot = cur_;
  st.seq = num_launched_++;
  last_tokens_on_device_ = false;
  st.t_start = profile_.enabled ? now_ms() : 0.0;
  st.ids.reserve(out.requests.size());
  for (const ScheduledRequest& s : out.requests) st.ids.push_back(s.id);
  int32_t* in = host_in_[cur_].get();
  SamplingRow* sampling = host_sampling_[cur_].get();
  const Layout& l = layout_;
  const StepSizes sizes = step_sizes(out);
  TESSERA_CHECK(sizes.num_tokens <= max_tokens_);
  TESSERA_CHECK(l.block_ids + sizes.num_block_ids < l.capacity);
  if (query_start_loc_.size() < out.requests.size() + 1) query_start_loc_.resize(out.requests.size() + 1);
  StepPlan& plan = plan_;
  plan_step(out, lookup, kv_.block_size,
            StepInputArrays{.token_ids = in + l.token_ids,
                            .positions = in + l.positions,
                            .slot_mapping = reinterpret_cast<int64_t*>(in + l.slot_mapping),
                            .block_table_indptr = in + l.indptr,
                            .block_table_ids = in + l.block_ids,
                            .token_seq = in + l.token_seq,
                            .query_start_loc = query_start_loc_.data()},
            &plan);
  const int32_t num_tokens = plan.sizes.num_tokens;
  int32_t num_block_ids = plan.sizes.num_block_ids;
  const bool one_token_per_seq = plan.one_token_per_seq;
  // Inputs sampled by the step in flight: copied on the device from that step's rows.
  const int32_t num_pending = static_cast<int32_t>(plan.pending.size());
  for (int32_t k = 0; k < num_pending; ++k) {
    auto row = sample_row_of_.find(plan.pending[k].second);
    TESSERA_CHECK_MSG(row != sample_row_of_.end(), "a pending input the step before did not sample on the device");
    in[l.pending + 2 * k] = plan.pending[k].first;
    in[l.pending + 2 * k + 1] = row->second;
  }
  st.rows = plan.rows;
  const std::vector<int32_t>& logits_indices = plan.logits_indices;
  std::vector<bool>& host_row = st.host_row;
  host_row.assign(logits_indices.size(), true);  // prompt-logprob rows: the host
  std::unordered_map<RequestId, int32_t> device_rows;  // this step's device-sampled rows
  device_rows.reserve(out.requests.size());
  size_t num_adjust = 0;     // logit adjustments of this step's device rows
  std::vector<TokenConstraint*> masks;  // grammars of device rows, by bitmask row
  bool reads_output = false;  // some row's adjustments read its output tokens (penalties)
  in[l.adjust] = 0;
  for (size_t i = 0; i < out.requests.size(); ++i) {
    const ScheduledRequest& s = out.requests[i];
    const Request* r = lookup(s.id);
    const int32_t pending = s.input_pending ? 1 : 0;
    const LogitsRows& lr = plan.rows[i];
    // Its rows: the prompt-logprob rows, then the sampling row (none in a middle chunk).
    size_t rows_begin = 0, rows_end = 0;
    if (lr.num_prompt_rows > 0 || lr.sample_row >= 0) {
      rows_begin = static_cast<size_t>(lr.num_prompt_rows > 0 ? lr.first_prompt_row : lr.sample_row);
      rows_end = static_cast<size_t>(lr.sample_row >= 0 ? lr.sample_row + 1 : lr.first_prompt_row + lr.num_prompt_rows);
    }
    for (size_t k = rows_begin; k < rows_end; ++k) {
      sampling[k] = SamplingRow{0.0f, 0, 1.0f, 0.0f, 0, 0};  // greedy: harmless for host rows
      in[l.mask_rows + k] = -1;
    }
    if (lr.sample_row >= 0 && samples_on_device(*r, pending)) {
      host_row[lr.sample_row] = false;
      device_rows.emplace(s.id, lr.sample_row);
      // Keyed by the request's seed and its output length: its draws do not depend on the batch.
      sampling[lr.sample_row] = make_sampling_row(r->params, r->sampling_seed,
                                                  static_cast<uint64_t>(r->num_output_tokens() + pending));
      if (r->params.logprobs > 0) {
        st.row_logprobs.resize(logits_indices.size(), 0);
        st.row_logprobs[lr.sample_row] = static_cast<int32_t>(r->params.logprobs);
      }
      // Bias, min_tokens' masks and penalties, applied on the device before sampling.
      TESSERA_CHECK_MSG(pending == 0 || !adjustments_read_output(r->params), "penalties over a pending token");
      const std::vector<LogitAdjustment> adj = logit_adjustments(
          r->params, r->prompt_token_ids, r->output_token_ids, eos_token_ids_, vocab_size(), pending);
      if (num_adjust + adj.size() > kMaxAdjustments ||
          (r->active_constraint() != nullptr && lr.sample_row >= max_logit_rows_)) {  // the host processes this row
        host_row[lr.sample_row] = true;
        device_rows.erase(s.id);
      } else if (!adj.empty()) {
        std::copy(adj.begin(), adj.end(), host_adjust_[cur_].get() + num_adjust);
        num_adjust += adj.size();
        reads_output = reads_output || adjustments_read_output(r->params);
      }
      // A grammar's mask: filled below from the tokens accepted so far, so the next step waits
      // for this one's token (no look-ahead).
      if (r->active_constraint() != nullptr && !host_row[lr.sample_row]) {
        TESSERA_CHECK_MSG(pending == 0, "a grammar over a pending token");
        in[l.mask_rows + lr.sample_row] = static_cast<int32_t>(masks.size());
        masks.push_back(r->active_constraint());
      }
      // A grammar, or one waiting for its start, needs this step's token before the next
      // step is planned (no look-ahead).
      if (r->constraint != nullptr) reads_output = true;
    }
    for (size_t k = rows_begin; k < rows_end; ++k) in[l.adjust + k + 1] = static_cast<int32_t>(num_adjust);
  }
  const int64_t num_rows = static_cast<int64_t>(logits_indices.size());
  // Device logprobs read the LM head's first chunk of rows; a row beyond it (after many
  // prompt-logprob rows) goes to the host instead.
  st.row_logprobs.resize(static_cast<size_t>(num_rows), 0);
  for (int64_t k = 0; k < num_rows; ++k) {
    if (st.row_logprobs[k] == 0) continue;
    if (k >= max_logit_rows_) {
      host_row[k] = true;
      st.row_logprobs[k] = 0;
    } else {
      st.top_k = std::max(st.top_k, static_cast<int>(st.row_logprobs[k]));
    }
  }
  std::copy(logits_indices.begin(), logits_indices.end(), in + l.logits_indices);
  sample_row_of_ = std::move(device_rows);
  // The grammars' masks, one bitmask row each (independent matchers: in parallel).
  const int64_t words = (vocab_size() + 31) / 32;
  uint32_t* bitmask = host_bitmask_[cur_].get();
  const int64_t num_masks = static_cast<int64_t>(masks.size());
  if (num_masks > 0) {
    // A mask takes microseconds and the device waits for them: waking a team of threads costs
    // more than a batch of cheap masks, so they run in parallel only when the running mean of
    // their cost says the batch is long.
    constexpr double kParallelBatchUs = 300.0;
    const int threads = std::max(1, std::min(omp_get_max_threads(), static_cast<int>(num_masks)));
    const bool parallel = threads > 1 && mask_us_ * static_cast<double>(num_masks) > kParallelBatchUs;
    const double t_masks = now_ms();
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
    for (int64_t m = 0; m < num_masks; ++m) masks[static_cast<size_t>(m)]->fill_allowed(bitmask + m * words, vocab_size());
    const double ms = now_ms() - t_masks;
    const double per_mask_us = 1000.0 * ms * (parallel ? threads : 1) / static_cast<double>(num_masks);
    mask_us_ = 0.8 * mask_us_ + 0.2 * per_mask_us;
    if (profile_.enabled) st.mask_ms = ms;
  }
  if (num_tokens == 0) return Status();

  // A decode step (one token per request, each sampling) replays a graph of the next bucket
  // size: the padding tokens form one extra sequence at position 0 over the null block.
  bool decode = one_token_per_seq && num_rows == num_tokens && num_tokens <= max_logit_rows_;
  for (int64_t i = 0; decode && i < num_rows; ++i) decode = logits_indices[i] == i;
  const int64_t bucket = use_graphs_ && decode ? graph_bucket(num_tokens) : 0;
  st.decode = decode;
  st.bucket = bucket;
  int64_t launch_tokens = num_tokens;
  if (bucket > 0) {
    num_block_ids = pad_to_bucket(num_tokens, bucket, static_cast<int32_t>(out.requests.size()), num_block_ids);
    launch_tokens = bucket;
  }

  st.t_planned = profile_.enabled ? now_ms() : 0.0;
  const int ev = static_cast<int>(st.seq % Profile::kEvents);
  if (profile_.enabled) TESSERA_CUDA_TRY(cudaEventRecord(profile_.begin[ev], stream_), "profile");
  if (op_timer_) op_timer_->start(stream_);
  if (Status s = offload_.enqueue(out.kv_copies, kv_, stream_, cur_); !s.ok()) return s;
  TESSERA_CUDA_TRY(cudaMemcpyAsync(dev_sampling_.get(), sampling,
                                   std::max<int64_t>(num_rows, launch_tokens) * sizeof(SamplingRow),
                                   cudaMemcpyHostToDevice, stream_),
                   "sampling parameters");
  int32_t* dev = dev_in_.get();
  TESSERA_CUDA_TRY(cudaMemcpyAsync(dev, in, (l.block_ids + num_block_ids) * sizeof(int32_t), cudaMemcpyHostToDevice,
                                   stream_),
                   "step inputs");
  if (num_adjust > 0) {
    TESSERA_CUDA_TRY(cudaMemcpyAsync(dev_adjust_.get(), host_adjust_[cur_].get(), num_adjust * sizeof(LogitAdjustment),
                                     cudaMemcpyHostToDevice, stream_),
                     "logit adjustments");
  }
  if (num_masks > 0) {
    TESSERA_CUDA_TRY(cudaMemcpyAsync(dev_bitmask_.get(), bitmask, num_masks * words * sizeof(uint32_t),
                                     cudaMemcpyHostToDevice, stream_),
                     "grammar masks");
  }
  feed_sampled_tokens(dev + l.token_ids, dev_next_.get(), dev + l.pending, num_pending, stream_);
  CudaStep step = device_step(launch_tokens, one_token_per_seq);
  // [prefill attention plan] Steps outside CUDA graphs with runs of prefill tokens: tiles for
  // the tiled prefill attention kernel (decode steps and graphs keep the split-KV kernel).
  if (bucket == 0) {
    const size_t num_seqs = out.requests.size();
    const ModelConfig& c = model_->config();
    const size_t plan_at = l.capacity - attention_plan_ints(max_tokens_);
    const AttentionPlanCounts plan = plan_attention(in + l.positions, query_start_loc_.data(),
                                                    static_cast<int64_t>(num_seqs), c.num_attention_heads,
                                                    c.num_key_value_heads, c.head_dim, in + plan_at, prefill_tile_rows_,
                                                    num_sms_);
    if (plan.prefill_tiles > 0) {
      TESSERA_CUDA_TRY(cudaMemcpyAsync(dev + plan_at, in + plan_at, plan.ints() * sizeof(int32_t),
                                       cudaMemcpyHostToDevice, stream_),
                       "attention plan");
      step.meta.plan = dev + plan_at;
      step.meta.plan_decode_tokens = plan.decode_tokens;
      step.meta.plan_prefill_tiles = plan.prefill_tiles;
      step.meta.plan_tile_rows = plan.tile_rows;
    }
  }
  if (bucket > 0) {
    if (Status s = launch_graph(step, bucket); !s.ok()) return s;
  } else if (Status s = forward_and_sample(step, num_rows); !s.ok()) {
    return s;
  }
  if (st.top_k > 0) {  // before later LM-head chunks overwrite the first one's logits
    const int64_t nr = std::min(max_logit_rows_, num_rows);
    top_logprobs(dev_logits_.get(), nr, vocab_size(), st.top_k, dev_next_.get(), dev_top_ids_.get(),
                 dev_top_lp_.get(), dev_chosen_lp_.get(), stream_);
    TESSERA_CUDA_TRY(cudaGetLastError(), "logprobs");
    const size_t cells = static_cast<size_t>(nr * st.top_k);
    TESSERA_CUDA_TRY(cudaMemcpyAsync(host_top_ids_[cur_].get(), dev_top_ids_.get(), cells * sizeof(int32_t),
                                     cudaMemcpyDeviceToHost, stream_),
                     "logprobs");
    TESSERA_CUDA_TRY(cudaMemcpyAsync(host_top_lp_[cur_].get(), dev_top_lp_.get(), cells * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream_),
                     "logprobs");
    TESSERA_CUDA_TRY(cudaMemcpyAsync(host_chosen_lp_[cur_].get(), dev_chosen_lp_.get(), nr * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream_),
                     "logprobs");
  }

  const int64_t vocab = vocab_size();
  const bool any_host = std::find(host_row.begin(), host_row.end(), true) != host_row.end();
  if (any_host) host_logits_.resize(static_cast<size_t>(num_rows * vocab));
  // The first chunk of rows is in dev_logits_ already; later chunks (prompt logprobs of
  // long prefills) run the LM head again.
  for (int64_t r0 = 0; r0 < num_rows; r0 += max_logit_rows_) {
    const int64_t nr = std::min(max_logit_rows_, num_rows - r0);
    if (r0 > 0) {
      if (Status s = model_->lm_head(step, act_, r0, nr, dev_logits_.get(), stream_); !s.ok()) return s;
      apply_logit_adjustments(dev_logits_.get(), nr, vocab, dev + l.adjust + r0, dev_adjust_.get(), stream_);
      sample_rows(dev_logits_.get(), nr, vocab, dev_sampling_.get() + r0, dev_next_.get() + r0, stream_);
    }
    for (int64_t k = 0; k < nr; ++k) {
      if (!host_row[r0 + k]) continue;
      TESSERA_CUDA_TRY(cudaMemcpyAsync(host_logits_.data() + (r0 + k) * vocab, dev_logits_.get() + k * vocab,
                                       vocab * sizeof(float), cudaMemcpyDeviceToHost, stream_),
                       "logits");
    }
  }
  TESSERA_CUDA_TRY(cudaMemcpyAsync(host_next_[cur_].get(), dev_next_.get(), num_rows * sizeof(int32_t),
                                   cudaMemcpyDeviceToHost, stream_),
                   "sampled tokens");
  TESSERA_CUDA_TRY(cudaEventRecord(step_done_[cur_], stream_), "step event");
  st.t_enqueued = profile_.enabled ? now_ms() : 0.0;
  if (profile_.enabled) TESSERA_CUDA_TRY(cudaEventRecord(profile_.end[ev], stream_), "profile");
  st.queued = true;
  // Per-op timing collects one step at a time: no step behind it. Penalties of the next step
  // need this one's tokens on the host.
  last_tokens_on_device_ = !any_host && !reads_output && op_timer_ == nullptr;
  return Status();
}

Status CudaModelRunner::finish_step(const RequestLookup& lookup, std::vector<RequestStepOutput>* outputs) {
  TESSERA_CHECK_MSG(!launched_.empty(), "collect without a launched step");
  Launched st = std::move(launched_.front());
  launched_.pop_front();
  if (st.queued) {
    const double t_wait = profile_.enabled ? now_ms() : 0.0;
    TESSERA_CUDA_TRY(cudaEventSynchronize(step_done_[st.slot]), "step");
    if (profile_.enabled) {
      const double t_done = now_ms();
      const int ev = static_cast<int>(st.seq % Profile::kEvents);
      TESSERA_CUDA_TRY(cudaEventSynchronize(profile_.end[ev]), "profile");
      float device_ms = 0, idle_ms = 0;
      cudaEventElapsedTime(&device_ms, profile_.begin[ev], profile_.end[ev]);
      // The device's idle time between the step before and this one (steps complete in order).
      if (st.seq > 0 && profile_.last_seq == st.seq - 1) {
        cudaEventElapsedTime(&idle_ms, profile_.end[(st.seq - 1) % Profile::kEvents], profile_.begin[ev]);
      }
      profile_.last_seq = st.seq;
      Profile::Sums& sums = st.bucket > 0 ? profile_.graph : profile_.eager;
      sums.steps += 1;
      sums.plan_ms += st.t_planned - st.t_start;
      sums.mask_ms += st.mask_ms;
      sums.enqueue_ms += st.t_enqueued - st.t_planned;
      sums.device_ms += device_ms;
      sums.wait_ms += t_done - t_wait;
      sums.idle_ms += std::max(0.0f, idle_ms);
      if (op_timer_) op_timer_->collect(st.decode);
    }
  }
  outputs->assign(st.ids.size(), RequestStepOutput{});
  const int32_t* next = host_next_[st.slot].get();
  for (size_t i = 0; i < st.ids.size(); ++i) {
    const Request* r = lookup(st.ids[i]);
    if (r == nullptr || r->status != RequestStatus::kRunning) continue;  // finished while the step ran
    LogitsRows lr = st.rows[i];
    RequestStepOutput& o = (*outputs)[i];
    const int32_t row = lr.sample_row;
    if (row >= 0 && !st.host_row[row]) {  // sampled on the device
      o.sampled_token = next[row];
      lr.sample_row = -1;
      if (st.top_k > 0 && st.row_logprobs[row] > 0) {
        // The top-k entries, then the sampled token when outside them (as the host path).
        const int32_t* ids = host_top_ids_[st.slot].get() + static_cast<size_t>(row) * st.top_k;
        const float* lps = host_top_lp_[st.slot].get() + static_cast<size_t>(row) * st.top_k;
        PositionLogprobs top;
        bool has_token = false;
        for (int c = 0; c < st.row_logprobs[row]; ++c) {
          top.emplace_back(ids[c], lps[c]);
          has_token = has_token || ids[c] == o.sampled_token;
        }
        o.token_logprob = host_chosen_lp_[st.slot][row];
        if (!has_token) top.emplace_back(o.sampled_token, o.token_logprob);
        o.logprobs = std::move(top);
      }
    }
    // Prompt-logprob rows, and a sampling row the device left to the host.
    if (lr.num_prompt_rows > 0 || lr.sample_row >= 0) host_sampler_->finish(*r, lr, host_logits_.data(), &o);
  }
  // A long prefill's prompt-logprob rows are hundreds of MB: not kept for the next step
  // (unless a step behind this one has filled them already).
  if (launched_.empty()) release_logits_above(&host_logits_, vocab_size(), max_logit_rows_);
  return Status();
}

}  // namespace tessera::cuda

namespace tessera::cuda {

Status CudaModelRunner::forward_and_sample(const CudaStep& step, int64_t num_rows) {
  if (Status s = model_->forward_hidden(step, num_rows, kv_, act_, stream_); !s.ok()) return s;
  const int64_t nr = std::min(max_logit_rows_, num_rows);
  if (nr == 0) return Status();
  if (Status s = model_->lm_head(step, act_, 0, nr, dev_logits_.get(), stream_); !s.ok()) return s;
  apply_logit_adjustments(dev_logits_.get(), nr, vocab_size(), dev_in_.get() + layout_.adjust, dev_adjust_.get(),
                          stream_);
  apply_token_bitmask(dev_logits_.get(), nr, vocab_size(), dev_in_.get() + layout_.mask_rows, dev_bitmask_.get(),
                      stream_);
  sample_rows(dev_logits_.get(), nr, vocab_size(), dev_sampling_.get(), dev_next_.get(), stream_);
  if (op_timer_) op_timer_->mark(OpTimer::kSample, stream_);
  return cuda_status(cudaGetLastError(), "sampling");
}

int64_t CudaModelRunner::graph_bucket(int64_t n) const {
  for (int64_t b : graph_buckets_) {
    if (b >= n) return b <= max_logit_rows_ && b <= max_tokens_ ? b : 0;
  }
  return 0;
}

Status CudaModelRunner::launch_graph(const CudaStep& step, int64_t bucket) {
  auto it = graphs_.find(bucket);
  if (it == graphs_.end()) {
    // With tuning, one eager run first picks the GEMM algorithms (timing is impossible
    // while capturing); it computes exactly what the graph will (the same K/V into the same
    // slots), so running both is harmless.
    if (bucket <= tune_rows_) {
      if (Status s = forward_and_sample(step, bucket); !s.ok()) return s;
    }
    cudaGraph_t graph = nullptr;
    TESSERA_CUDA_TRY(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "graph capture");
    const Status captured = forward_and_sample(step, bucket);
    const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
    if (!captured.ok()) return Status::error("graph capture of " + std::to_string(bucket) + " tokens: " + captured.message());
    TESSERA_CUDA_TRY(end, "graph capture");
    cudaGraphExec_t exec = nullptr;
    const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
    if (inst != cudaSuccess) cudaGraphDestroy(graph);
    TESSERA_CUDA_TRY(inst, "graph instantiation");
    Graph g{exec, graph, {}};
    if (step.kv_layer_ready != nullptr) {
      // The KV offload waits, by layer, to point at the event set of each replay's step.
      size_t n = 0;
      TESSERA_CUDA_TRY(cudaGraphGetNodes(graph, nullptr, &n), "graph nodes");
      std::vector<cudaGraphNode_t> nodes(n);
      TESSERA_CUDA_TRY(cudaGraphGetNodes(graph, nodes.data(), &n), "graph nodes");
      g.kv_waits.assign(static_cast<size_t>(model_->config().num_hidden_layers), nullptr);
      for (cudaGraphNode_t node : nodes) {
        cudaGraphNodeType type;
        TESSERA_CUDA_TRY(cudaGraphNodeGetType(node, &type), "graph nodes");
        if (type != cudaGraphNodeTypeWaitEvent) continue;
        cudaEvent_t e = nullptr;
        TESSERA_CUDA_TRY(cudaGraphEventWaitNodeGetEvent(node, &e), "graph nodes");
        const int layer = offload_.layer_of(e);
        if (layer >= 0 && static_cast<size_t>(layer) < g.kv_waits.size()) g.kv_waits[static_cast<size_t>(layer)] = node;
      }
      for (cudaGraphNode_t node : g.kv_waits) {
        if (node == nullptr) return Status::error("graph capture: a KV offload wait is missing");
      }
    }
    it = graphs_.emplace(bucket, g).first;
  }
  for (size_t l = 0; l < it->second.kv_waits.size(); ++l) {
    TESSERA_CUDA_TRY(cudaGraphExecEventWaitNodeSetEvent(it->second.exec, it->second.kv_waits[l], step.kv_layer_ready[l]),
                     "graph KV offload wait");
  }
  return cuda_status(cudaGraphLaunch(it->second.exec, stream_), "graph launch");
}

}  // namespace tessera::cuda

namespace tessera::cuda {

Status CudaModelRunner::warm_up() {
  if (!use_graphs_) return Status();
  cur_ = 0;
  int32_t* in = host_in_[cur_].get();
  const Layout& l = layout_;
  int32_t* dev = dev_in_.get();
  for (int64_t bucket : graph_buckets_) {
    if (graph_bucket(bucket) != bucket) continue;
    // Padding tokens only.
    in[l.indptr] = 0;
    const int32_t num_block_ids = pad_to_bucket(0, bucket, 0, 0);
    TESSERA_CUDA_TRY(cudaMemcpyAsync(dev_sampling_.get(), host_sampling_[cur_].get(), bucket * sizeof(SamplingRow),
                                     cudaMemcpyHostToDevice, stream_),
                     "warm-up");
    TESSERA_CUDA_TRY(cudaMemcpyAsync(dev, in, (l.block_ids + num_block_ids) * sizeof(int32_t),
                                     cudaMemcpyHostToDevice, stream_),
                     "warm-up");
    if (Status s = launch_graph(device_step(bucket, true), bucket); !s.ok()) return s;
    // The inputs are rewritten for the next bucket: wait for this one.
    TESSERA_CUDA_TRY(cudaStreamSynchronize(stream_), "warm-up");
  }
  return Status();
}

}  // namespace tessera::cuda

namespace tessera::cuda {

int32_t CudaModelRunner::pad_to_bucket(int64_t num_tokens, int64_t bucket, int32_t pad_seq, int32_t num_block_ids) {
  int32_t* in = host_in_[cur_].get();
  const Layout& l = layout_;
  int64_t* slots = reinterpret_cast<int64_t*>(in + l.slot_mapping);
  if (num_tokens == 0) in[l.adjust] = 0;
  for (int64_t i = num_tokens; i < bucket; ++i) {
    in[l.token_ids + i] = 0;
    in[l.positions + i] = 0;
    in[l.token_seq + i] = pad_seq;
    slots[i] = 0;
    in[l.logits_indices + i] = static_cast<int32_t>(i);
    host_sampling_[cur_][i] = SamplingRow{0.0f, 0, 1.0f, 0.0f, 0, 0};  // greedy
    in[l.adjust + i + 1] = in[l.adjust + num_tokens];  // no adjustments
    in[l.mask_rows + i] = -1;                            // no grammar
  }
  in[l.block_ids + num_block_ids] = 0;  // the padding sequence's table: the null block
  in[l.indptr + pad_seq + 1] = num_block_ids + 1;
  return num_block_ids + 1;
}

CudaStep CudaModelRunner::device_step(int64_t num_tokens, bool one_token_per_seq) const {
  const int32_t* dev = dev_in_.get();
  const Layout& l = layout_;
  CudaStep step;
  step.token_ids = dev + l.token_ids;
  step.meta.positions = dev + l.positions;
  step.meta.token_seq = dev + l.token_seq;
  step.meta.slot_mapping = reinterpret_cast<const int64_t*>(dev + l.slot_mapping);
  step.meta.block_table_indptr = dev + l.indptr;
  step.meta.block_table_ids = dev + l.block_ids;
  step.meta.num_tokens = num_tokens;
  step.meta.min_split_keys = attention_split_keys_;
  step.meta.rope_in_attention = rope_in_attention_;
  step.one_token_per_seq = one_token_per_seq;
  step.num_splits = attention_num_splits(num_tokens, model_->config().num_key_value_heads, num_sms_, max_model_len_);
  step.logits_indices = dev + l.logits_indices;
  step.kv_layer_ready = offload_.layer_events(cur_);
  return step;
}

}  // namespace tessera::cuda
