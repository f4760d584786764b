// Structured outputs' cost per token: for each JSON Schema of a corpus (a .jsonl of
// {"name", "schema", "refused"}; the built-in set without one), the grammar's compile time
// over a tokenizer's vocabulary, then random walks through its masks (a uniform pick among
// the allowed tokens each step, as sampling at any temperature may take) timing each
// fill_allowed and accept, the work a decode step adds per constrained request. Prints the
// compile times' and the per-token mask and accept times' median and p99.
//
// Usage: bench_structured_mask --tokenizer PATH [--corpus FILE.jsonl] [--walks N] [--tokens N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "structured/structured_outputs.h"
#include "tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

const char* const kBuiltin[] = {
    R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]})",
    R"({"type":"object","properties":{"id":{"type":"string","format":"uuid"},"email":{"type":"string","format":"email"},)"
    R"("created":{"type":"string","format":"date-time"},"tags":{"type":"array","items":{"type":"string"},"maxItems":5}},)"
    R"("required":["id","email"],"additionalProperties":false})",
    R"({"$defs":{"node":{"type":"object","properties":{"value":{"type":"integer"},"children":{"type":"array",)"
    R"("items":{"$ref":"#/$defs/node"}}},"required":["value"]}},"$ref":"#/$defs/node"})",
    R"({"type":"object","properties":{"status":{"enum":["open","closed","pending"]},"priority":{"type":"integer",)"
    R"("minimum":1,"maximum":5},"items":{"type":"array","minItems":1,"items":{"type":"object","properties":{)"
    R"("sku":{"type":"string","pattern":"^[A-Z]{3}-[0-9]{4}$"},"qty":{"type":"integer","minimum":1}},)"
    R"("required":["sku","qty"]}}},"required":["status","items"]})",
    R"({"anyOf":[{"type":"object","properties":{"kind":{"const":"circle"},"r":{"type":"number"}},"required":["kind","r"]},)"
    R"({"type":"object","properties":{"kind":{"const":"rect"},"w":{"type":"number"},"h":{"type":"number"}},)"
    R"("required":["kind","w","h"]}]})",
};

}  // namespace

int main(int argc, char** argv) {
  std::string tokenizer_path, corpus;
  int walks = 5, max_tokens = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--tokenizer") tokenizer_path = argv[i + 1];
    else if (a == "--corpus") corpus = argv[i + 1];
    else if (a == "--walks") walks = std::stoi(argv[i + 1]);
    else if (a == "--tokens") max_tokens = std::stoi(argv[i + 1]);
  }
  if (tokenizer_path.empty()) {
    std::fprintf(stderr, "usage: bench_structured_mask --tokenizer PATH [--corpus FILE.jsonl] [--walks N] [--tokens N]\n");
    return 2;
  }
  auto tok = tessera::tokenizer::load_tokenizer(tokenizer_path);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", tok.error().c_str());
    return 1;
  }
  const int64_t vocab = static_cast<int64_t>((*tok)->vocab_size());
  const int32_t eos = (*tok)->special_tokens().eos_id.value_or(0);
  std::vector<std::string> schemas;
  if (!corpus.empty()) {
    std::ifstream in(corpus);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      const auto j = nlohmann::ordered_json::parse(line);
      if (j.value("refused", nlohmann::ordered_json()).is_null()) schemas.push_back(j.at("schema").dump());
    }
  } else {
    schemas.assign(std::begin(kBuiltin), std::end(kBuiltin));
  }

  const auto t_setup = Clock::now();
  tessera::structured::StructuredOutputs so(**tok, vocab, {eos});
  // The tokenizer info is built on first use: a trivial grammar pays for it, apart.
  tessera::StructuredOutputsParams warm;
  warm.regex = "a";
  if (!so.compile(warm).ok()) return 1;
  const double setup_ms = us_since(t_setup) / 1000.0;

  std::vector<double> compile_ms, mask_us, accept_us;
  std::vector<uint32_t> bitmask(static_cast<size_t>((vocab + 31) / 32));
  std::mt19937 rng(7);
  int refused = 0;
  for (const std::string& schema : schemas) {
    tessera::StructuredOutputsParams p;
    p.json = schema;
    const auto t0 = Clock::now();
    auto g = so.compile(p);
    compile_ms.push_back(us_since(t0) / 1000.0);
    if (!g.ok()) {
      ++refused;
      continue;
    }
    for (int w = 0; w < walks; ++w) {
      auto m = so.matcher(**g);
      for (int t = 0; t < max_tokens; ++t) {
        const auto m0 = Clock::now();
        m->fill_allowed(bitmask.data(), vocab);
        mask_us.push_back(us_since(m0));
        std::vector<int32_t> allowed;
        for (int64_t id = 0; id < vocab; ++id) {
          if ((bitmask[static_cast<size_t>(id / 32)] >> (id % 32)) & 1u) allowed.push_back(static_cast<int32_t>(id));
        }
        if (allowed.empty()) break;
        const bool can_end = std::find(allowed.begin(), allowed.end(), eos) != allowed.end();
        const int32_t next = can_end && rng() % 4 == 0 ? eos : allowed[rng() % allowed.size()];
        const auto a0 = Clock::now();
        const bool ok = m->accept(next);
        accept_us.push_back(us_since(a0));
        if (!ok || m->is_terminated()) break;
      }
    }
  }
  std::printf("tokenizer %s: %lld tokens; set-up (tokenizer info) %.1f ms\n", tokenizer_path.c_str(),
              static_cast<long long>(vocab), setup_ms);
  std::printf("compile: %zu schemas (%d refused), median %.2f ms, p99 %.2f ms, max %.2f ms\n", schemas.size(), refused,
              percentile(compile_ms, 0.5), percentile(compile_ms, 0.99), percentile(compile_ms, 1.0));
  std::printf("mask per token: %zu masks, median %.1f us, p99 %.1f us, max %.1f us\n", mask_us.size(),
              percentile(mask_us, 0.5), percentile(mask_us, 0.99), percentile(mask_us, 1.0));
  std::printf("accept per token: median %.1f us, p99 %.1f us\n", percentile(accept_us, 0.5),
              percentile(accept_us, 0.99));
  return 0;
}
