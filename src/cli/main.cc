#include <omp.h>
#include <unistd.h>

#include <cstdlib>

#include <CLI/CLI.hpp>

#include "backend/cpu/matmul.h"
#include "cli/commands.h"

namespace tessera::cli {

void set_threads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

void add_activation_precision_option(CLI::App* cmd, std::string* value) {
  cmd->add_option("--activation-precision", *value,
                  "Quantized weights: precise (default; ~15-bit activations, matches fp32 "
                  "references to ~1e-3 in logprob) or int8 (8-bit activations, as llama.cpp)")
      ->check(CLI::IsMember({"int8", "precise"}));
}

void apply_activation_precision(const std::string& value) {
  cpu::set_activation_precision(value == "precise" ? cpu::ActivationPrecision::kPrecise
                                                   : cpu::ActivationPrecision::kInt8);
}

}  // namespace tessera::cli

namespace {

// An idle OpenMP thread spins 300,000 times (libgomp's default) before it sleeps. On cores
// shared with another busy program the spinning threads take the time slices the working
// ones need (docs/benchmarks.md, "OpenMP spinning"). libgomp reads its environment when it loads, before main, so the bound needs
// a fresh exec; OMP_WAIT_POLICY or GOMP_SPINCOUNT given by the user are kept.
void bound_openmp_spin(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  setenv("GOMP_SPINCOUNT", "2000", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: carry on with the default
}

}  // namespace

int main(int argc, char** argv) {
  bound_openmp_spin(argv);
  CLI::App app{"Tessera: LLM inference and serving engine"};
  app.require_subcommand(1);
  int exit_code = 0;
  tessera::cli::add_generate_command(app, &exit_code);
  tessera::cli::add_bench_command(app, &exit_code);
  tessera::cli::add_tokenize_commands(app, &exit_code);
  tessera::cli::add_template_command(app, &exit_code);
  tessera::cli::add_serve_command(app, &exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
