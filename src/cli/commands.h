// Subcommands of the `tessera` CLI; each registers its options and a callback.
#pragma once

#include <CLI/CLI.hpp>

namespace tessera::cli {

void add_generate_command(CLI::App& app, int* exit_code);
void add_bench_command(CLI::App& app, int* exit_code);
void add_bench_throughput_command(CLI::App& bench, int* exit_code);
void add_bench_serve_command(CLI::App& bench, int* exit_code);
// `tokenize` and `detokenize`.
void add_tokenize_commands(CLI::App& app, int* exit_code);
void add_template_command(CLI::App& app, int* exit_code);
void add_serve_command(CLI::App& app, int* exit_code);

// Sets the number of CPU threads the kernels use (0 = all cores).
void set_threads(int threads);

// --activation-precision int8|precise: how quantized-weight matmuls quantize activations.
void add_activation_precision_option(CLI::App* cmd, std::string* value);
void apply_activation_precision(const std::string& value);

}  // namespace tessera::cli
