// The Llama-3.1-8B decode shapes and random device weights for the CUDA benchmarks: 32 layers
// with their own q/k/v, o, gate/up and down matrices back to back (so no layer's weights are
// in L2 from the one before), the LM head and the RMSNorm weights.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <random>

#include "bench_util.h"

namespace tessera::bench {

constexpr int kLayers = 32;
constexpr int64_t kHidden = 4096, kHeads = 32, kKvHeads = 8, kHeadDim = 128, kInter = 14336, kVocab = 128256;
constexpr int64_t kQkv = (kHeads + 2 * kKvHeads) * kHeadDim;
constexpr float kEps = 1e-5f;

struct Llama8BWeights {
  __nv_bfloat16 *qkv, *o, *gate_up, *down, *lm_head, *attn_norm, *ffn_norm, *final_norm;
  const __nv_bfloat16* qkv_w(int l) const { return qkv + l * kQkv * kHidden; }
  const __nv_bfloat16* o_w(int l) const { return o + l * kHidden * kHidden; }
  const __nv_bfloat16* gate_up_w(int l) const { return gate_up + l * 2 * kInter * kHidden; }
  const __nv_bfloat16* down_w(int l) const { return down + l * kHidden * kInter; }
};

// N(0, 0.02) matrices and N(0, 1) norm weights (device_random).
inline Llama8BWeights random_llama8b_weights(std::mt19937& rng) {
  Llama8BWeights w;
  w.qkv = device_random(size_t{kLayers} * kQkv * kHidden, rng, 0.02f);
  w.o = device_random(size_t{kLayers} * kHidden * kHidden, rng, 0.02f);
  w.gate_up = device_random(size_t{kLayers} * 2 * kInter * kHidden, rng, 0.02f);
  w.down = device_random(size_t{kLayers} * kHidden * kInter, rng, 0.02f);
  w.lm_head = device_random(size_t{kVocab} * kHidden, rng, 0.02f);
  w.attn_norm = device_random(kHidden, rng, 1.0f);
  w.ffn_norm = device_random(kHidden, rng, 1.0f);
  w.final_norm = device_random(kHidden, rng, 1.0f);
  return w;
}

}  // namespace tessera::bench
