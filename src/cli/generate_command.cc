// `tessera generate`: offline generation for prompts given as token ids, one JSON line
// per request.
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "engine/generator.h"
#include "model/model.h"

namespace tessera::cli {
namespace {

struct GenerateOptions {
  std::string activation_precision = "precise";
  std::string model;
  std::string prompts_file;
  std::vector<int32_t> prompt_token_ids;
  SamplingParams params;
  int64_t seed = -1;
  bool json = false;
  int threads = 0;
};

nlohmann::ordered_json output_json(const RequestOutput& r) {
  nlohmann::ordered_json j;
  j["prompt_token_ids"] = r.prompt_token_ids;
  j["outputs"] = nlohmann::ordered_json::array();
  for (const CompletionOutput& o : r.outputs) {
    nlohmann::ordered_json oj;
    oj["token_ids"] = o.token_ids;
    if (!o.logprobs.empty()) {
      oj["logprobs"] = nlohmann::ordered_json::array();
      for (const PositionLogprobs& pos : o.logprobs) {
        nlohmann::ordered_json m = nlohmann::ordered_json::object();
        for (const auto& [id, lp] : pos) m[std::to_string(id)] = lp;
        oj["logprobs"].push_back(std::move(m));
      }
    }
    oj["finish_reason"] = o.finish_reason;
    j["outputs"].push_back(std::move(oj));
  }
  return j;
}

// One prompt per JSONL line: {"prompt_token_ids": [...]}. Bad lines fail alone.
Result<std::vector<int32_t>> parse_prompt_line(const std::string& line, int64_t line_no) {
  const std::string where = "line " + std::to_string(line_no) + ": ";
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::error(where + "not a JSON object");
  auto it = j.find("prompt_token_ids");
  if (it == j.end() || !it->is_array()) {
    return Status::error(where + "expected \"prompt_token_ids\": [ints] (text prompts need a tokenizer)");
  }
  std::vector<int32_t> ids;
  for (const auto& v : *it) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
      return Status::error(where + "prompt_token_ids must be non-negative integers");
    }
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return ids;
}

int run_generate(GenerateOptions& o) {
  set_threads(o.threads);
  apply_activation_precision(o.activation_precision);
  if (o.seed >= 0) o.params.seed = static_cast<uint64_t>(o.seed);
  if (std::string err = o.params.validate(); !err.empty()) {
    std::cerr << "error: " << err << "\n";
    return 2;
  }
  std::vector<Result<std::vector<int32_t>>> prompts;
  if (!o.prompt_token_ids.empty()) prompts.emplace_back(o.prompt_token_ids);
  if (!o.prompts_file.empty()) {
    std::ifstream in(o.prompts_file);
    if (!in) {
      std::cerr << "error: cannot open " << o.prompts_file << "\n";
      return 2;
    }
    std::string line;
    for (int64_t n = 1; std::getline(in, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      prompts.push_back(parse_prompt_line(line, n));
    }
  }
  if (prompts.empty()) {
    std::cerr << "error: no prompts (use --prompts-file or --prompt-token-ids)\n";
    return 2;
  }
  auto model = load_model(o.model);
  if (!model.ok()) {
    std::cerr << "error: " << model.error() << "\n";
    return 1;
  }
  Generator generator(**model);
  int status = 0;
  for (const auto& prompt : prompts) {
    if (!prompt.ok()) {
      std::cerr << "error: " << prompt.error() << "\n";
      if (o.json) std::cout << nlohmann::json{{"error", prompt.error()}}.dump() << "\n";
      status = 1;
      continue;
    }
    auto out = generator.generate(*prompt, o.params);
    if (!out.ok()) {
      std::cerr << "error: " << out.error() << "\n";
      if (o.json) std::cout << nlohmann::json{{"prompt_token_ids", *prompt}, {"error", out.error()}}.dump() << "\n";
      status = 1;
      continue;
    }
    if (o.json) {
      std::cout << output_json(*out).dump() << "\n";
    } else {
      const CompletionOutput& c = out->outputs[0];
      std::cout << "prompt_token_ids: " << nlohmann::json(out->prompt_token_ids).dump() << "\n"
                << "token_ids: " << nlohmann::json(c.token_ids).dump() << "\n"
                << "finish_reason: " << c.finish_reason << "\n";
    }
    std::cout.flush();
  }
  return status;
}

}  // namespace

void add_generate_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate completions for prompts");
  cmd->add_option("--model", o->model, "Model directory, .safetensors or .gguf file")->required();
  cmd->add_option("--prompts-file", o->prompts_file, "JSONL file of {\"prompt_token_ids\": [...]}");
  cmd->add_option("--prompt-token-ids", o->prompt_token_ids, "One prompt as token ids")->delimiter(',');
  cmd->add_option("--max-tokens", o->params.max_tokens, "Tokens to generate per prompt");
  cmd->add_option("--temperature", o->params.temperature, "0 = greedy");
  cmd->add_option("--top-k", o->params.top_k, "-1 = disabled");
  cmd->add_option("--top-p", o->params.top_p, "Nucleus sampling mass");
  cmd->add_option("--seed", o->seed, "Sampling seed");
  cmd->add_option("--logprobs", o->params.logprobs, "Top-K logprobs per generated token");
  cmd->add_flag("--ignore-eos", o->params.ignore_eos, "Do not stop at end-of-sequence tokens");
  cmd->add_flag("--json", o->json, "One JSON line per request");
  cmd->add_option("--threads", o->threads, "CPU threads (default: all cores)");
  add_activation_precision_option(cmd, &o->activation_precision);
  cmd->callback([o, exit_code] { *exit_code = run_generate(*o); });
}

}  // namespace tessera::cli
