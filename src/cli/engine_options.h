// Flags shared by the commands that run the engine (generate, bench throughput, serve),
// with vLLM's names.
#pragma once

#include <CLI/CLI.hpp>

#include "tessera/llm.h"
#include "tessera/sampling_params.h"

namespace tessera::cli {

// --model, --tokenizer (paths or Hub names), --revision, --tokenizer-revision, --download-dir,
// --block-size, --kv-cache-memory, --max-model-len, --max-num-seqs, --max-num-batched-tokens,
// --[no-]enable-prefix-caching, --[no-]enable-chunked-prefill, --seed, --disable-progress-bar,
// --profile.
void add_engine_options(CLI::App* cmd, EngineArgs* args);

// --max-tokens, --min-tokens, --temperature, --top-k, --top-p, --min-p, penalties,
// --stop, --stop-token-ids, --include-stop-str-in-output, --ignore-eos, --logprobs,
// --prompt-logprobs, --no-skip-special-tokens, -n, --sampling-seed.
void add_sampling_options(CLI::App* cmd, SamplingParams* params, int64_t* seed);

}  // namespace tessera::cli
