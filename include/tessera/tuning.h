// Tuning switches and profiling: the knobs that choose among equivalent kernels or shapes,
// and what the engine reports about where its time goes. They are read once at start-up
// (EngineArgs::tuning, by default from TESSERA_* environment variables: tuning_switches()
// lists each with its default) and passed down; no kernel or runner reads the environment.
#pragma once

#include <span>
#include <string>

#include "common/status.h"

namespace tessera {

struct Tuning {
  // Split-KV decode attention: a token takes at most one split per this many visible keys.
  int attention_split_keys = 64;
  // Decode attention applies RoPE and writes the KV cache itself (one kernel, not two).
  bool rope_in_attention = true;
  // Query rows (token x head) per tile of the prefill attention kernel: 64 or 128; 0: per step.
  int prefill_tile_rows = 0;
  // Decode steps of at most this many tokens run the MLP and the LM head as bulk GEMVs (0: never).
  int64_t decode_bulk_tokens = 8;
  // cuBLASLt algorithm tuning at start-up for GEMM shapes of up to this many rows (0: none).
  int64_t gemm_tune_rows = 16;
  // Run one step of every decode batch size at start-up (captures the CUDA graphs then,
  // not on the first requests).
  bool cuda_warmup = true;
};

// Where time goes, printed when the engine ends (`--profile engine,cuda,ops`).
struct Profiling {
  bool engine = false;  // each step's host time: schedule, launch, wait, update
  bool cuda = false;    // each step's device time by phase (CUDA events)
  bool ops = false;     // device time per op (eager steps: no CUDA graphs)
};

struct TuningSwitch {
  const char* env;            // TESSERA_...
  const char* default_value;  // as the variable would spell it
  const char* doc;
};

// Every switch, in the order of the docs.
std::span<const TuningSwitch> tuning_switches();

// Tuning from the TESSERA_* environment variables (unset ones keep their defaults); a value
// that does not parse, or is out of range, is an error naming the variable.
Result<Tuning> tuning_from_environment();

// "engine", "cuda" and "ops", comma-separated ("" : none).
Result<Profiling> parse_profiling(const std::string& spec);

}  // namespace tessera
