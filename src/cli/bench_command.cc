// `tessera bench latency`: prompt and decode throughput of one sequence (prompt of N tokens,
// then M generated), with peak RSS. Prompt ids follow a fixed rule shared with
// bench/llamacpp_bench.py so both engines see the same tokens.
// `tessera bench throughput`: vLLM's offline throughput benchmark (bench_throughput.cc).
#include <sys/resource.h>

#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"

#ifndef TESSERA_VERSION
#define TESSERA_VERSION "dev"
#endif
#include "engine/generator.h"
#include "model/model.h"

namespace tessera::cli {
namespace {

struct BenchOptions {
  std::string activation_precision = "precise";
  std::string model;
  int threads = 0;
  int64_t prompt_tokens = 512;
  int64_t gen_tokens = 128;
  bool json = false;
};

int run_bench(const BenchOptions& o) {
  set_threads(o.threads);
  apply_activation_precision(o.activation_precision);
  auto model = load_model(o.model);
  if (!model.ok()) {
    std::cerr << "error: " << model.error() << "\n";
    return 1;
  }
  const int64_t vocab = (*model)->config().vocab_size;
  const int64_t span = std::min<int64_t>(30000, vocab - 200);
  if (span <= 0 || o.prompt_tokens < 1) {
    std::cerr << "error: vocabulary too small or empty prompt\n";
    return 2;
  }
  std::vector<int32_t> prompt(static_cast<size_t>(o.prompt_tokens));
  for (int64_t i = 0; i < o.prompt_tokens; ++i) prompt[i] = static_cast<int32_t>(100 + (i * 7919) % span);
  SamplingParams params;
  params.temperature = 0.0f;
  params.ignore_eos = true;
  params.max_tokens = o.gen_tokens;
  Generator generator(**model);
  // Warm-up (pages the mmapped weights in, sizes scratch buffers): 8 prompt tokens + 1 step.
  SamplingParams warm = params;
  warm.max_tokens = 2;
  if (auto w = generator.generate(std::vector<int32_t>(prompt.begin(), prompt.begin() + std::min<int64_t>(8, o.prompt_tokens)), warm); !w.ok()) {
    std::cerr << "error: " << w.error() << "\n";
    return 1;
  }
  GenerationTiming t;
  auto out = generator.generate(prompt, params, &t);
  if (!out.ok()) {
    std::cerr << "error: " << out.error() << "\n";
    return 1;
  }
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  const double rss_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
  const double prompt_tok_s = static_cast<double>(t.num_prompt_tokens) / t.prompt_seconds;
  const double decode_tok_s = t.num_decode_steps > 0 ? static_cast<double>(t.num_decode_steps) / t.decode_seconds : 0.0;
  if (o.json) {
    nlohmann::json j = {{"engine", "tessera"}, {"version", TESSERA_VERSION}, {"activation_precision", o.activation_precision},         {"threads", o.threads},
                        {"prompt_tokens", o.prompt_tokens}, {"gen_tokens", o.gen_tokens},
                        {"prompt_s", t.prompt_seconds},  {"prompt_tok_s", prompt_tok_s},
                        {"decode_s", t.decode_seconds},  {"decode_tok_s", decode_tok_s},
                        {"peak_rss_mib", rss_mib}};
    std::cout << j.dump() << "\n";
  } else {
    std::printf("prompt: %lld tokens in %.3f s = %.1f tok/s\n", static_cast<long long>(o.prompt_tokens),
                t.prompt_seconds, prompt_tok_s);
    std::printf("decode: %lld steps in %.3f s = %.1f tok/s\n", static_cast<long long>(t.num_decode_steps),
                t.decode_seconds, decode_tok_s);
    std::printf("peak RSS: %.1f MiB\n", rss_mib);
  }
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks: latency (one sequence), throughput (offline batch)");
  bench->require_subcommand(1);
  CLI::App* cmd = bench->add_subcommand("latency", "Prompt and decode speed of one sequence");
  cmd->add_option("--model", o->model, "Model directory, .safetensors or .gguf file")->required();
  cmd->add_option("--threads", o->threads, "CPU threads (default: all cores)");
  add_activation_precision_option(cmd, &o->activation_precision);
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "Prompt length");
  cmd->add_option("--gen-tokens", o->gen_tokens, "Tokens to generate");
  cmd->add_flag("--json", o->json, "Print one JSON line");
  cmd->callback([o, exit_code] { *exit_code = run_bench(*o); });
  add_bench_throughput_command(*bench, exit_code);
  add_bench_serve_command(*bench, exit_code);
}

}  // namespace tessera::cli
