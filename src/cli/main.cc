#include <omp.h>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace tessera::cli {

void set_threads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

}  // namespace tessera::cli

int main(int argc, char** argv) {
  CLI::App app{"Tessera: LLM inference and serving engine"};
  app.require_subcommand(1);
  int exit_code = 0;
  tessera::cli::add_generate_command(app, &exit_code);
  tessera::cli::add_bench_command(app, &exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
