// `tessera bench latency`: vLLM's latency benchmark: end-to-end time of one batch of
// --batch-size prompts of N tokens, each generating M (greedy, ignoring EOS), averaged over
// iterations; also prompt speed (time to first token) and decode time per step, with peak
// RSS. Prompt ids follow a fixed rule shared with bench/llamacpp_bench.py.
// `tessera bench throughput`: vLLM's offline throughput benchmark (bench_throughput.cc).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "cli/commands.h"

#ifndef TESSERA_VERSION
#define TESSERA_VERSION "dev"
#endif
#include "cli/engine_options.h"
#include "tessera/llm.h"

namespace tessera::cli {
namespace {

struct BenchOptions {
  EngineArgs engine;
  std::string activation_precision = "precise";
  int threads = 0;
  int64_t prompt_tokens = 512;
  int64_t gen_tokens = 128;
  int64_t batch_size = 1;
  int num_iters = 3;
  int num_iters_warmup = 1;
  bool json = false;
};

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

int run_bench(BenchOptions& o) {
  set_threads(o.threads);
  apply_activation_precision(o.activation_precision);
  if (o.prompt_tokens < 1 || o.gen_tokens < 1 || o.batch_size < 1 || o.num_iters < 1 || o.num_iters_warmup < 0) {
    std::cerr << "error: --prompt-tokens, --gen-tokens, --batch-size and --num-iters must be positive\n";
    return 2;
  }
  o.engine.disable_progress_bar = true;
  auto llm = LLM::create(o.engine);
  if (!llm.ok()) {
    std::cerr << "error: " << llm.error() << "\n";
    return 1;
  }
  const int64_t vocab = (*llm)->vocab_size();
  const int64_t span = std::min<int64_t>(30000, vocab - 200);
  if (span <= 0) {
    std::cerr << "error: vocabulary too small\n";
    return 2;
  }
  // Sequence b's prompt: the fixed rule shared with bench/llamacpp_bench.py, shifted by b so
  // the prefix cache cannot serve one sequence from another.
  std::vector<PromptInput> prompts;
  for (int64_t b = 0; b < o.batch_size; ++b) {
    std::vector<int32_t> ids(static_cast<size_t>(o.prompt_tokens));
    for (int64_t i = 0; i < o.prompt_tokens; ++i) ids[i] = static_cast<int32_t>(100 + (i * 7919 + b * 104729) % span);
    prompts.emplace_back(std::move(ids));
  }
  SamplingParams params;
  params.temperature = 0.0f;
  params.ignore_eos = true;
  params.max_tokens = o.gen_tokens;
  // Warm-up iterations (page the weights in, size buffers, capture graphs), then measured
  // ones; every iteration recomputes its prompts (prefix caching would serve them).
  std::vector<double> latencies, ttfts, tpots;
  for (int it = 0; it < o.num_iters_warmup + o.num_iters; ++it) {
    for (size_t b = 0; b < prompts.size(); ++b) {
      prompts[b].token_ids[0] = static_cast<int32_t>(100 + (it * 31 + static_cast<int64_t>(b) * 7) % span);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<RequestOutput> outs = (*llm)->generate(prompts, params);
    const double latency = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (const auto& r : outs) {
      if (!r.error.empty()) {
        std::cerr << "error: " << r.error << "\n";
        return 1;
      }
    }
    if (it < o.num_iters_warmup) continue;
    latencies.push_back(latency);
    double ttft = 0, tpot = 0;
    for (const auto& r : outs) {
      ttft = std::max(ttft, r.metrics.time_to_first_token());
      tpot += r.metrics.time_per_output_token(static_cast<int64_t>(r.outputs[0].token_ids.size()));
    }
    ttfts.push_back(ttft);
    tpots.push_back(tpot / static_cast<double>(outs.size()));
  }
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  const double rss_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
  const double avg = std::accumulate(latencies.begin(), latencies.end(), 0.0) / static_cast<double>(latencies.size());
  const double ttft = percentile(ttfts, 0.5), tpot = percentile(tpots, 0.5);
  const double prompt_tok_s = static_cast<double>(o.batch_size * o.prompt_tokens) / ttft;
  const double decode_tok_s = tpot > 0 ? static_cast<double>(o.batch_size) / tpot : 0.0;
  if (o.json) {
    nlohmann::json j = {{"engine", "tessera"}, {"version", TESSERA_VERSION}, {"device", o.engine.device},
                        {"activation_precision", o.activation_precision}, {"threads", o.threads},
                        {"batch_size", o.batch_size}, {"prompt_tokens", o.prompt_tokens}, {"gen_tokens", o.gen_tokens},
                        {"avg_latency_s", avg}, {"p50_latency_s", percentile(latencies, 0.5)},
                        {"p90_latency_s", percentile(latencies, 0.9)}, {"ttft_s", ttft}, {"tpot_s", tpot},
                        {"prompt_s", ttft}, {"prompt_tok_s", prompt_tok_s},
                        {"decode_s", tpot * static_cast<double>(o.gen_tokens - 1)}, {"decode_tok_s", decode_tok_s},
                        {"peak_rss_mib", rss_mib}};
    std::cout << j.dump() << "\n";
  } else {
    std::printf("Avg latency: %.4f s (p50 %.4f, p90 %.4f) for batch %lld, %lld -> %lld tokens, %d iterations\n", avg,
                percentile(latencies, 0.5), percentile(latencies, 0.9), static_cast<long long>(o.batch_size),
                static_cast<long long>(o.prompt_tokens), static_cast<long long>(o.gen_tokens), o.num_iters);
    std::printf("prompt: %lld tokens in %.4f s = %.1f tok/s (time to first token)\n",
                static_cast<long long>(o.batch_size * o.prompt_tokens), ttft, prompt_tok_s);
    std::printf("decode: %.3f ms per step = %.1f tok/s\n", tpot * 1e3, decode_tok_s);
    std::printf("peak RSS: %.1f MiB\n", rss_mib);
  }
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks: latency (one sequence), throughput (offline batch)");
  bench->require_subcommand(1);
  CLI::App* cmd = bench->add_subcommand("latency", "End-to-end latency of one batch; prompt and decode speed");
  add_engine_options(cmd, &o->engine);
  cmd->add_option("--threads", o->threads, "CPU threads (default: all cores)");
  add_activation_precision_option(cmd, &o->activation_precision);
  cmd->add_option("--prompt-tokens,--input-len", o->prompt_tokens, "Prompt length");
  cmd->add_option("--gen-tokens,--output-len", o->gen_tokens, "Tokens to generate");
  cmd->add_option("--batch-size", o->batch_size, "Sequences run together");
  cmd->add_option("--num-iters", o->num_iters, "Measured iterations");
  cmd->add_option("--num-iters-warmup", o->num_iters_warmup, "Unmeasured iterations first");
  cmd->add_flag("--json", o->json, "Print one JSON line");
  cmd->callback([o, exit_code] { *exit_code = run_bench(*o); });
  add_bench_throughput_command(*bench, exit_code);
  add_bench_serve_command(*bench, exit_code);
}

}  // namespace tessera::cli
