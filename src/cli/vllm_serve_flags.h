// The flags of `vllm serve` that Tessera's serve has no option of its own for: accepted where
// they mean nothing here (a log Tessera does not write, remote code it never runs), refused at
// start, by name, where they ask for a feature not built yet, so a deployment's command line
// either works or says what is missing. vLLM's flags for what uvicorn does under it (a Unix
// socket, the access log) are real here: they fill UvicornFlags, for the HTTP server.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "tessera/engine_args.h"

namespace tessera::cli {

struct UvicornFlags {
  std::string uds;                  // --uds PATH: a Unix socket instead of --host/--port
  bool disable_access_log = false;  // --disable-uvicorn-access-log
  std::string excluded_endpoints;   // --disable-access-log-for-endpoints "/health,/metrics"
  std::string log_level = "info";   // --uvicorn-log-level: above info, no access log
};

void add_vllm_serve_flags(CLI::App* cmd, UvicornFlags* uvicorn);

// vLLM's engine arguments that users' `vllm serve` command lines carry (the Python package's
// LLM() takes the same, python/tessera/llm.py): --seed fills args; --dtype,
// --tensor-parallel-size, --pipeline-parallel-size and --quantization are accepted at the
// values Tessera runs (auto / bfloat16, 1, 1, none) and refused, by name,
// at any other; --swap-space is accepted without effect (vLLM's V1 engine ignores it too).
void add_vllm_engine_flags(CLI::App* cmd, EngineArgs* args);

}  // namespace tessera::cli
