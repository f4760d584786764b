// `tessera generate`: offline batch generation on the engine, for prompts given as text or
// token ids; one JSON line (or a short text block) per prompt, in input order. With
// --use-beam-search, LLM::beam_search instead (-n the beam width), its sequences as outputs.
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "tessera/llm.h"

namespace tessera::cli {
namespace {

struct GenerateOptions {
  EngineArgs engine;
  std::string activation_precision = "precise";
  std::string prompts_file;
  std::vector<std::string> prompts;
  std::vector<int32_t> prompt_token_ids;
  SamplingParams params;
  int64_t seed = -1;
  bool json = false;
  int threads = 0;
  bool use_beam_search = false;
  double length_penalty = 1.0;
};

nlohmann::ordered_json logprobs_json(const PositionLogprobs& pos) {
  nlohmann::ordered_json m = nlohmann::ordered_json::object();
  for (const auto& [id, lp] : pos) m[std::to_string(id)] = lp;
  return m;
}

nlohmann::ordered_json output_json(const RequestOutput& r) {
  nlohmann::ordered_json j;
  if (r.prompt) j["prompt"] = *r.prompt;
  j["prompt_token_ids"] = r.prompt_token_ids;
  if (!r.error.empty()) {
    j["error"] = r.error;
    return j;
  }
  if (!r.prompt_logprobs.empty()) {
    j["prompt_logprobs"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < r.prompt_logprobs.size(); ++i) {
      j["prompt_logprobs"].push_back(i == 0 ? nlohmann::ordered_json() : logprobs_json(r.prompt_logprobs[i]));
    }
  }
  j["outputs"] = nlohmann::ordered_json::array();
  for (const CompletionOutput& o : r.outputs) {
    nlohmann::ordered_json oj;
    oj["index"] = o.index;
    oj["text"] = o.text;
    oj["token_ids"] = o.token_ids;
    if (o.cumulative_logprob) oj["cumulative_logprob"] = *o.cumulative_logprob;
    if (!o.logprobs.empty()) {
      oj["logprobs"] = nlohmann::ordered_json::array();
      for (const PositionLogprobs& pos : o.logprobs) oj["logprobs"].push_back(logprobs_json(pos));
    }
    oj["finish_reason"] = o.finish_reason;
    if (o.stop_string) {
      oj["stop_reason"] = *o.stop_string;
    } else if (o.stop_token) {
      oj["stop_reason"] = *o.stop_token;
    }
    j["outputs"].push_back(std::move(oj));
  }
  return j;
}

// One prompt per JSONL line: {"prompt": "text"} or {"prompt_token_ids": [...]}.
Result<PromptInput> parse_prompt_line(const std::string& line, int64_t line_no) {
  const std::string where = "line " + std::to_string(line_no) + ": ";
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::error(where + "not a JSON object");
  if (auto text = j.find("prompt"); text != j.end()) {
    if (!text->is_string()) return Status::error(where + "\"prompt\" must be a string");
    return PromptInput(text->get<std::string>());
  }
  auto it = j.find("prompt_token_ids");
  if (it == j.end() || !it->is_array()) {
    return Status::error(where + "expected \"prompt\": \"text\" or \"prompt_token_ids\": [ints]");
  }
  std::vector<int32_t> ids;
  for (const auto& v : *it) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
      return Status::error(where + "prompt_token_ids must be non-negative integers");
    }
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return PromptInput(std::move(ids));
}

// LLM::beam_search's sequences as the outputs of a request, best first: finish_reason "stop"
// when EOS (the stop token) ended one, else "length"; logprobs (with --logprobs) are each
// step's candidates.
std::vector<RequestOutput> beam_search(LLM& llm, const std::vector<PromptInput>& prompts, const GenerateOptions& o) {
  BeamSearchParams bp;
  bp.beam_width = o.params.n;
  bp.max_tokens = o.params.max_tokens;
  bp.ignore_eos = o.params.ignore_eos;
  bp.length_penalty = o.length_penalty;
  bp.temperature = o.params.temperature;
  const std::vector<BeamSearchOutput> results = llm.beam_search(prompts, bp);
  std::vector<RequestOutput> outs(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    RequestOutput& r = outs[i];
    r.prompt = prompts[i].text;
    r.error = results[i].error;
    r.finished = true;
    for (size_t k = 0; k < results[i].sequences.size(); ++k) {
      const BeamSequence& s = results[i].sequences[k];
      const auto prompt_end = s.token_ids.end() - static_cast<std::ptrdiff_t>(s.output_token_ids.size());
      r.prompt_token_ids.assign(s.token_ids.begin(), prompt_end);
      CompletionOutput c;
      c.index = static_cast<int64_t>(k);
      c.text = s.text;
      c.token_ids = s.output_token_ids;
      c.cumulative_logprob = s.cum_logprob;
      if (o.params.logprobs > 0) c.logprobs = s.logprobs;
      c.finish_reason = s.finished_by_eos ? "stop" : "length";
      if (s.finished_by_eos) c.stop_token = s.output_token_ids.back();
      r.outputs.push_back(std::move(c));
    }
  }
  return outs;
}

std::string dump(const nlohmann::ordered_json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

int run_generate(GenerateOptions& o) {
  set_threads(o.threads);
  apply_activation_precision(o.activation_precision);
  if (o.seed >= 0) o.params.seed = static_cast<uint64_t>(o.seed);
  // Beam search checks its own parameters (n > 1 at temperature 0 is its normal case).
  if (std::string err = o.use_beam_search ? "" : o.params.validate(); !err.empty()) {
    std::cerr << "error: " << err << "\n";
    return 2;
  }
  // Prompts in order; a bad line keeps its place and reports its error there.
  std::vector<Result<PromptInput>> inputs;
  for (const std::string& text : o.prompts) inputs.emplace_back(PromptInput(text));
  if (!o.prompt_token_ids.empty()) inputs.emplace_back(PromptInput(o.prompt_token_ids));
  if (!o.prompts_file.empty()) {
    std::ifstream in(o.prompts_file);
    if (!in) {
      std::cerr << "error: cannot open " << o.prompts_file << "\n";
      return 2;
    }
    std::string line;
    for (int64_t n = 1; std::getline(in, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      inputs.push_back(parse_prompt_line(line, n));
    }
  }
  if (inputs.empty()) {
    std::cerr << "error: no prompts (use --prompt, --prompts-file or --prompt-token-ids)\n";
    return 2;
  }
  auto llm = LLM::create(o.engine);
  if (!llm.ok()) {
    std::cerr << "error: " << llm.error() << "\n";
    return 1;
  }
  std::vector<PromptInput> prompts;
  std::vector<size_t> slot;  // inputs index of each valid prompt
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].ok()) continue;
    prompts.push_back(*inputs[i]);
    slot.push_back(i);
  }
  const std::vector<RequestOutput> outs =
      o.use_beam_search ? beam_search(**llm, prompts, o) : (*llm)->generate(prompts, o.params);
  std::vector<const RequestOutput*> by_input(inputs.size(), nullptr);
  for (size_t k = 0; k < outs.size(); ++k) by_input[slot[k]] = &outs[k];
  int status = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const RequestOutput* r = by_input[i];
    const std::string error = r == nullptr ? inputs[i].error() : r->error;
    if (!error.empty()) {
      std::cerr << "error: " << error << "\n";
      status = 1;
    }
    if (o.json) {
      std::cout << (r == nullptr ? dump(nlohmann::ordered_json{{"error", error}}) : dump(output_json(*r))) << "\n";
    } else if (r != nullptr && error.empty()) {
      for (const CompletionOutput& c : r->outputs) {
        if (r->prompt) std::cout << "prompt: " << *r->prompt << "\n";
        std::cout << "text: " << c.text << "\n"
                  << "token_ids: " << nlohmann::json(c.token_ids).dump() << "\n"
                  << "finish_reason: " << c.finish_reason << "\n";
      }
    }
  }
  std::cout.flush();
  return status;
}

}  // namespace

void add_generate_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate completions for prompts (offline batch)");
  add_engine_options(cmd, &o->engine);
  cmd->add_option("--prompt", o->prompts, "A text prompt (repeatable)");
  cmd->add_option("--prompts-file", o->prompts_file, "JSONL file of {\"prompt\": \"...\"} or {\"prompt_token_ids\": [...]}");
  cmd->add_option("--prompt-token-ids", o->prompt_token_ids, "One prompt as token ids")->delimiter(',');
  add_sampling_options(cmd, &o->params, &o->seed);
  cmd->add_flag("--use-beam-search", o->use_beam_search,
                "Beam search (vLLM's LLM.beam_search): -n is the beam width; --max-tokens, --ignore-eos, "
                "--temperature and --length-penalty apply, the other sampling flags do not");
  cmd->add_option("--length-penalty", o->length_penalty,
                  "Beam search ranks by cum_logprob / len^length_penalty (len: prompt + output, a final "
                  "EOS not counted)");
  cmd->add_flag("--json", o->json, "One JSON line per prompt");
  cmd->add_option("--threads", o->threads, "CPU threads (default: all cores)");
  add_activation_precision_option(cmd, &o->activation_precision);
  cmd->callback([o, exit_code] { *exit_code = run_generate(*o); });
}

}  // namespace tessera::cli
