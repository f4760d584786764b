// What the sampling parameters do to a logits row before sampling (logit bias, the masks of
// allowed_token_ids and bad words, min_tokens' masking of EOS and stop tokens, repetition / frequency / presence
// penalties), as a sparse list of per-token adjustments: built on the host from the
// request's tokens, applied by the CPU path (process_logits) and by the GPU
// (cuda::apply_logit_adjustments) with the same float operations, so both give the same bits.
// Host and device code (C++17).
#pragma once

#include <cmath>
#include <cstdint>

#include "sample/counter_rng.h"  // TESSERA_HD

#if !defined(__CUDACC__)
#include <span>
#include <vector>

#include "tessera/sampling_params.h"
#endif

namespace tessera {

// One token's adjustment: y = x + add (-inf: masked); then, when repetition != 1,
// y = y > 0 ? y / repetition : y * repetition; then y - subtract.
struct LogitAdjustment {
  int32_t token;
  float add;         // logit bias, or -inf (masked while min_tokens are not reached)
  float repetition;  // repetition penalty for a token of the prompt or the output, else 1
  float subtract;    // frequency_penalty * count + presence_penalty, for a token of the output
};
static_assert(sizeof(LogitAdjustment) == 16, "copied to the device as is");

// x * y, never fused with the subtraction after it (the CPU build has FMA, and nvcc fuses by
// default): both sides round the product.
TESSERA_HD float unfused_mul(float x, float y) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(x, y);
#else
  volatile float p = x * y;
  return p;
#endif
}

TESSERA_HD float adjust_logit(float x, const LogitAdjustment& a) {
  float y = a.add == -INFINITY ? -INFINITY : x + a.add;
  if (a.repetition != 1.0f) y = y > 0.0f ? y / a.repetition : unfused_mul(y, a.repetition);
  return y - a.subtract;
}

#if !defined(__CUDACC__)
// The adjustments params ask for, by ascending token id (ids outside [0, vocab) ignored);
// empty when they change nothing. output: the tokens generated so far; num_pending more were
// sampled by steps in flight (min_tokens counts them; penalties need none pending).
std::vector<LogitAdjustment> logit_adjustments(const SamplingParams& params, std::span<const int32_t> prompt,
                                               std::span<const int32_t> output, std::span<const int32_t> eos_token_ids,
                                               int64_t vocab, int64_t num_pending = 0);
// Whether the adjustments depend on the output tokens (penalties, bad words of several
// tokens), not only on their count.
bool adjustments_read_output(const SamplingParams& params);
#endif

}  // namespace tessera
