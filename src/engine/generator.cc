#include "engine/generator.h"

#include "sample/token_sampler.h"
#include "engine/request_validation.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>

namespace tessera {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Result<RequestOutput> Generator::generate(const std::vector<int32_t>& prompt,
                                          const SamplingParams& params, GenerationTiming* timing) {
  const ModelConfig& c = model_.config();
  const RequestLimits limits{c.vocab_size, static_cast<int32_t>(c.max_position_embeddings)};
  if (Status s = validate_request(prompt, params, limits); !s.ok()) return s;
  const int64_t total = static_cast<int64_t>(prompt.size()) + params.max_tokens;
  if (total > c.max_position_embeddings) {
    return Status::error("prompt (" + std::to_string(prompt.size()) + " tokens) + max_tokens (" +
                         std::to_string(params.max_tokens) + ") exceeds the model's maximum length " +
                         std::to_string(c.max_position_embeddings));
  }

  // Blocks 1..n hold the sequence; block 0 stays the null block.
  const int64_t num_blocks = (total + kBlockSize - 1) / kBlockSize;
  if (!cache_ || cache_->shape().num_blocks < num_blocks + 1) {
    KvCacheShape shape;
    shape.num_layers = c.num_hidden_layers;
    shape.num_blocks = num_blocks + 1;
    shape.block_size = kBlockSize;
    shape.num_kv_heads = c.num_key_value_heads;
    shape.head_dim = c.head_dim;
    shape.dtype = kv_dtype_;
    cache_ = std::make_unique<KvCache>(shape);
  }
  std::vector<int32_t> block_table(static_cast<size_t>(num_blocks));
  std::iota(block_table.begin(), block_table.end(), 1);

  const uint64_t seed = params.seed.value_or(std::random_device{}());
  std::vector<float> logits(static_cast<size_t>(c.vocab_size));
  std::vector<float> logprobs(params.logprobs > 0 ? static_cast<size_t>(c.vocab_size) : 0);
  CompletionOutput out;
  out.finish_reason = "length";
  GenerationTiming t;
  t.num_prompt_tokens = static_cast<int64_t>(prompt.size());

  auto t0 = std::chrono::steady_clock::now();
  // Prefill in chunks; the last chunk yields the first token's logits.
  for (int64_t start = 0; start < static_cast<int64_t>(prompt.size()); start += kMaxPrefillChunk) {
    const int64_t n = std::min<int64_t>(kMaxPrefillChunk, static_cast<int64_t>(prompt.size()) - start);
    const bool last = start + n == static_cast<int64_t>(prompt.size());
    ForwardBatch batch;
    batch.add_sequence(prompt.data() + start, n, static_cast<int32_t>(start), block_table, kBlockSize, last);
    model_.forward(batch, *cache_, logits.data());
  }
  t.prompt_seconds = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();

  int32_t pos = static_cast<int32_t>(prompt.size());
  for (int64_t step = 0;; ++step) {
    const int32_t token =
        sample_token(logits.data(), c.vocab_size, make_sampling_row(params, seed, static_cast<uint64_t>(step)));
    out.token_ids.push_back(token);
    if (params.logprobs > 0) {
      log_softmax(logits.data(), c.vocab_size, logprobs.data());
      PositionLogprobs top = top_logprobs(logprobs.data(), c.vocab_size, params.logprobs);
      if (std::none_of(top.begin(), top.end(), [&](const auto& e) { return e.first == token; })) {
        top.emplace_back(token, logprobs[token]);
      }
      out.logprobs.push_back(std::move(top));
    }
    const bool is_eos = !params.ignore_eos && std::count(c.eos_token_ids.begin(), c.eos_token_ids.end(), token) > 0;
    const bool is_stop = std::count(params.stop_token_ids.begin(), params.stop_token_ids.end(), token) > 0;
    if (is_eos || is_stop) {
      out.finish_reason = "stop";
      break;
    }
    if (static_cast<int64_t>(out.token_ids.size()) >= params.max_tokens) break;
    ForwardBatch batch;
    batch.add_sequence(&token, 1, pos, block_table, kBlockSize, true);
    model_.forward(batch, *cache_, logits.data());
    ++pos;
    ++t.num_decode_steps;
  }
  t.decode_seconds = seconds_since(t0);
  if (timing != nullptr) *timing = t;

  RequestOutput result;
  result.prompt_token_ids = prompt;
  result.outputs.push_back(std::move(out));
  return result;
}

}  // namespace tessera
