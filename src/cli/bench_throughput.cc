// `tessera bench throughput`: vLLM's offline throughput benchmark. N requests (random token
// ids of --input-len, or prompts from a JSONL file) run through LLM::generate at once,
// ignoring EOS so every request produces --output-len tokens; prints requests/s, total
// tokens/s and output tokens/s, and --output-json writes them. --structured-json gives every
// request a JSON Schema to follow (the cost of structured outputs).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "tessera/llm.h"

namespace tessera::cli {
namespace {

struct ThroughputOptions {
  EngineArgs engine;
  std::string activation_precision = "precise";
  std::string dataset = "random";
  int64_t input_len = 128;
  int64_t output_len = 128;
  int64_t num_prompts = 64;
  int64_t prefix_len = 0;  // random dataset: a shared prefix of this many tokens
  uint64_t seed = 0;
  std::string output_json;
  int threads = 0;
  std::string structured_json;  // a JSON Schema file every request's output follows
};

int run_throughput(ThroughputOptions& o) {
  set_threads(o.threads);
  apply_activation_precision(o.activation_precision);
  if (o.num_prompts < 1 || o.input_len < 1 || o.output_len < 1 || o.prefix_len < 0) {
    std::cerr << "error: --num-prompts, --input-len and --output-len must be positive\n";
    return 2;
  }
  o.engine.disable_progress_bar = true;
  auto llm = LLM::create(o.engine);
  if (!llm.ok()) {
    std::cerr << "error: " << llm.error() << "\n";
    return 1;
  }
  std::vector<PromptInput> prompts;
  if (o.dataset == "random") {
    // Random ids away from the special tokens at the bottom of most vocabularies.
    std::mt19937 rng(static_cast<uint32_t>(o.seed));
    const int64_t vocab = (*llm)->vocab_size();
    const int64_t low = vocab > 1000 ? 100 : 3;
    const uint32_t span = static_cast<uint32_t>(std::min<int64_t>(20000, vocab - low));
    auto token = [&] { return static_cast<int32_t>(low + rng() % span); };
    std::vector<int32_t> prefix(static_cast<size_t>(o.prefix_len));
    for (auto& t : prefix) t = token();
    for (int64_t i = 0; i < o.num_prompts; ++i) {
      std::vector<int32_t> ids = prefix;
      while (static_cast<int64_t>(ids.size()) < o.prefix_len + o.input_len) ids.push_back(token());
      prompts.emplace_back(std::move(ids));
    }
  } else {
    std::ifstream in(o.dataset);
    if (!in) {
      std::cerr << "error: cannot open dataset " << o.dataset << "\n";
      return 2;
    }
    std::string line;
    while (static_cast<int64_t>(prompts.size()) < o.num_prompts && std::getline(in, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("prompt") && j["prompt"].is_string()) prompts.emplace_back(j["prompt"].get<std::string>());
    }
    if (prompts.empty()) {
      std::cerr << "error: no {\"prompt\": ...} lines in " << o.dataset << "\n";
      return 2;
    }
  }
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 1.0f;
  p.ignore_eos = true;
  p.max_tokens = o.output_len;
  p.seed = o.seed;
  if (!o.structured_json.empty()) {
    std::ifstream in(o.structured_json);
    std::string schema((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::cerr << "error: cannot read " << o.structured_json << "\n";
      return 2;
    }
    p.structured_outputs = StructuredOutputsParams{};
    p.structured_outputs->json = schema;
  }
  // One request of one token before the clock, in both modes: a schema's grammar is compiled
  // once and cached for every request after it (as a server does for a client's repeated
  // schema); its compile time is printed apart.
  {
    SamplingParams warm = p;
    warm.max_tokens = 1;
    const auto w0 = std::chrono::steady_clock::now();
    // Shorter than a KV block: it leaves nothing in the prefix cache.
    const std::vector<RequestOutput> w = (*llm)->generate({PromptInput(std::vector<int32_t>(8, 1))}, warm);
    const double warm_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    if (!w.empty() && !w[0].error.empty()) {
      std::cerr << "error: " << w[0].error << "\n";
      return 1;
    }
    if (p.structured_outputs) std::printf("Grammar compiled (and one warm-up request) in %.3f s, before the timer\n", warm_s);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<RequestOutput> outs = (*llm)->generate(prompts, p);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int64_t prompt_tokens = 0, output_tokens = 0, failed = 0;
  for (const auto& r : outs) {
    if (!r.error.empty()) {
      ++failed;
      continue;
    }
    prompt_tokens += static_cast<int64_t>(r.prompt_token_ids.size());
    for (const auto& c : r.outputs) output_tokens += static_cast<int64_t>(c.token_ids.size());
  }
  if (failed > 0) std::cerr << "warning: " << failed << " requests failed (first: " << outs[0].error << ")\n";
  const double n = static_cast<double>(outs.size() - failed);
  std::printf("Throughput: %.2f requests/s, %.2f total tokens/s, %.2f output tokens/s\n", n / elapsed,
              (prompt_tokens + output_tokens) / elapsed, output_tokens / elapsed);
  std::printf("Total num prompt tokens: %lld\nTotal num output tokens: %lld\n", static_cast<long long>(prompt_tokens),
              static_cast<long long>(output_tokens));
  const auto stats = (*llm)->stats();
  std::printf("Prefix cache hit rate: %.1f%%, preemptions: %lld\n",
              stats.prefix_cache_queries > 0 ? 100.0 * stats.prefix_cache_hits / stats.prefix_cache_queries : 0.0,
              static_cast<long long>(stats.num_preemptions));
  if (stats.kv_offload_stores > 0 || stats.kv_offload_loads > 0) {
    std::printf("KV offload: %lld blocks stored to host memory, %lld loaded back\n",
                static_cast<long long>(stats.kv_offload_stores), static_cast<long long>(stats.kv_offload_loads));
  }
  if (!o.output_json.empty()) {
    nlohmann::ordered_json j = {{"elapsed_time", elapsed},
                                {"num_requests", static_cast<int64_t>(n)},
                                {"total_num_tokens", prompt_tokens + output_tokens},
                                {"total_num_output_tokens", output_tokens},
                                {"requests_per_second", n / elapsed},
                                {"tokens_per_second", (prompt_tokens + output_tokens) / elapsed},
                                {"output_tokens_per_second", output_tokens / elapsed},
                                {"prefix_cache_hit_rate",
                                 stats.prefix_cache_queries > 0 ? double(stats.prefix_cache_hits) / stats.prefix_cache_queries : 0.0}};
    std::ofstream out(o.output_json);
    out << j.dump(2) << "\n";
    if (!out) {
      std::cerr << "error: cannot write " << o.output_json << "\n";
      return 1;
    }
  }
  return failed > 0 ? 1 : 0;
}

}  // namespace

void add_bench_throughput_command(CLI::App& bench, int* exit_code) {
  auto o = std::make_shared<ThroughputOptions>();
  CLI::App* cmd = bench.add_subcommand("throughput", "Offline throughput of a batch of requests");
  add_engine_options(cmd, &o->engine);
  cmd->add_option("--dataset", o->dataset, "random, or a JSONL file of {\"prompt\": ...}");
  cmd->add_option("--input-len", o->input_len, "Prompt tokens per request (random dataset)");
  cmd->add_option("--output-len", o->output_len, "Output tokens per request");
  cmd->add_option("--num-prompts", o->num_prompts, "Requests");
  cmd->add_option("--prefix-len", o->prefix_len, "Random dataset: tokens of a prefix shared by every request");
  cmd->add_option("--seed", o->seed, "Dataset and sampling seed");
  cmd->add_option("--output-json", o->output_json, "Write the figures to this JSON file");
  cmd->add_option("--threads", o->threads, "CPU threads (default: all cores)");
  cmd->add_option("--structured-json", o->structured_json,
                  "A JSON Schema file: every request's output follows it (structured outputs; a request ends "
                  "when its JSON is complete, EOS being all the grammar allows then)");
  add_activation_precision_option(cmd, &o->activation_precision);
  cmd->callback([o, exit_code] { *exit_code = run_throughput(*o); });
}

}  // namespace tessera::cli
