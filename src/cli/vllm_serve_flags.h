// The flags of `vllm serve` that Tessera's serve has no option of its own for: accepted where
// they mean nothing here (they name a hub revision, a log Tessera does not write), refused at
// start, by name, where they ask for a feature not built yet, so a deployment's command line
// either works or says what is missing.
#pragma once

#include <CLI/CLI.hpp>

namespace tessera::cli {

void add_vllm_serve_flags(CLI::App* cmd);

}  // namespace tessera::cli
