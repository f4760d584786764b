// The offline API, as vLLM's LLM class:
//   auto llm = tessera::LLM::create({.model = "SmolLM2-135M-Instruct.Q4_1.gguf"});
//   auto outs = llm->generate({"Hello, my name is"}, tessera::SamplingParams{.max_tokens = 32});
// Outputs come back in input order.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tessera/engine_args.h"
#include "tessera/outputs.h"
#include "tessera/sampling_params.h"

namespace tessera {

// A prompt as text or as token ids.
struct PromptInput {
  std::optional<std::string> text;
  std::vector<int32_t> token_ids;
  PromptInput(std::string t) : text(std::move(t)) {}  // NOLINT: implicit by design
  PromptInput(const char* t) : text(t) {}             // NOLINT
  PromptInput(std::vector<int32_t> ids) : token_ids(std::move(ids)) {}  // NOLINT
};

// How llm.chat renders a conversation.
struct ChatOptions {
  bool add_generation_prompt = true;
  std::string chat_template;  // a .jinja / tokenizer_config.json / .gguf path; "" = the model's
  nlohmann::ordered_json tools;  // list of tool schemas, or null
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();  // e.g. enable_thinking
};

// Beam search (vLLM's LLM.beam_search and BeamSearchParams; src/engine/beam_search_state.h):
// each step keeps the beam_width candidates of highest cumulative logprob, every candidate
// whose token is EOS (unless ignore_eos) is set aside as finished, and the result is ranked by
// cum_logprob / len^length_penalty (len: the sequence, prompt included, without a final EOS).
struct BeamSearchParams {
  int64_t beam_width = 4;
  int64_t max_tokens = 16;
  bool ignore_eos = false;
  double length_penalty = 1.0;
  float temperature = 0.0f;  // of each step's draw (the candidates are the top logprobs either way)
};

struct BeamSequence {
  std::vector<int32_t> token_ids;  // prompt + generated
  std::vector<int32_t> output_token_ids;  // ends with the EOS token when finished_by_eos
  std::vector<PositionLogprobs> logprobs;  // per generated token: its step's candidates, best first
  std::string text;                // of the generated tokens
  double cum_logprob = 0.0;
  bool finished_by_eos = false;
};

struct BeamSearchOutput {
  std::vector<BeamSequence> sequences;  // best first, at most beam_width
  std::string error;
};

class LLM {
 public:
  static Result<std::unique_ptr<LLM>> create(const EngineArgs& args);
  ~LLM();

  // One output per prompt, in input order; a prompt that fails validation gets an output
  // with `error` set and the others still run.
  std::vector<RequestOutput> generate(const std::vector<PromptInput>& prompts, const SamplingParams& params);
  // One SamplingParams per prompt.
  std::vector<RequestOutput> generate(const std::vector<PromptInput>& prompts, const std::vector<SamplingParams>& params);

  // Conversations ([{"role": ..., "content": ...}, ...]) through the chat template, then
  // generate(); a conversation the template rejects fails alone.
  std::vector<RequestOutput> chat(const std::vector<nlohmann::ordered_json>& conversations,
                                  const SamplingParams& params, const ChatOptions& options = {});
  // The rendered prompt text of one conversation.
  Result<std::string> apply_chat_template(const nlohmann::ordered_json& messages, const ChatOptions& options = {});

  // One output per prompt. Each step runs every live beam of every prompt for one token in
  // one batch (the prefix cache makes the shared history free).
  std::vector<BeamSearchOutput> beam_search(const std::vector<PromptInput>& prompts, const BeamSearchParams& params);

  // Prefix-cache and scheduler counters since start (for tests and benchmarks).
  struct Stats {
    int64_t prefix_cache_queries = 0;
    int64_t prefix_cache_hits = 0;
    int64_t num_preemptions = 0;
    int64_t kv_offload_stores = 0;  // blocks copied to host memory (--kv-offloading-size)
    int64_t kv_offload_loads = 0;   // blocks loaded back on prefix hits
    int64_t num_kv_blocks = 0;
    int64_t peak_kv_blocks_used = 0;
  };
  Stats stats() const;
  int32_t max_model_len() const;
  int64_t vocab_size() const;
  const std::vector<int32_t>& eos_token_ids() const;
  // Text of ids (special tokens skipped); "" without a tokenizer.
  std::string decode(const std::vector<int32_t>& ids) const;

  struct Impl;

 private:
  explicit LLM(std::unique_ptr<Impl> impl);
  std::vector<RequestOutput> generate_batch(const std::vector<PromptInput>& prompts,
                                            const std::vector<SamplingParams>& params, bool progress);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
