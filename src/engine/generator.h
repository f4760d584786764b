// Generator: runs one request at a time through a Model over its own paged KV cache.
// The offline path until the scheduler-driven engine takes over (it keeps this contract).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "common/status.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "sample/sampler.h"
#include "tessera/outputs.h"
#include "tessera/sampling_params.h"

namespace tessera {

struct GenerationTiming {
  double prompt_seconds = 0.0;  // prefill of the prompt, first token's logits included
  double decode_seconds = 0.0;  // every later step
  int64_t num_prompt_tokens = 0;
  int64_t num_decode_steps = 0;
};

class Generator {
 public:
  static constexpr int64_t kBlockSize = 16;
  static constexpr int64_t kMaxPrefillChunk = 512;  // tokens per forward during prefill

  // kv_dtype: the KV cache's element type; unset: the model's auto_kv_dtype (the engine's
  // default).
  explicit Generator(Model& model, std::optional<KvDtype> kv_dtype = std::nullopt)
      : model_(model), kv_dtype_(kv_dtype.value_or(model.auto_kv_dtype())) {}

  // Fails on an invalid request (token ids out of range, too long, bad params).
  Result<RequestOutput> generate(const std::vector<int32_t>& prompt_token_ids,
                                 const SamplingParams& params, GenerationTiming* timing = nullptr);

 private:
  Model& model_;
  KvDtype kv_dtype_;
  std::unique_ptr<KvCache> cache_;  // grown to the longest request seen
};

}  // namespace tessera
