// The offline API, as vLLM's LLM class:
//   auto llm = tessera::LLM::create({.model = "SmolLM2-135M-Instruct.Q4_1.gguf"});
//   auto outs = llm->generate({"Hello, my name is"}, tessera::SamplingParams{.max_tokens = 32});
// Outputs come back in input order.
#pragma once

#include <cstdint>
#include <functional>
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
  // As transformers: the prompt ends right after the final message's content, for the model
  // to go on with it (add_generation_prompt must be false).
  bool continue_final_message = false;
  // "" = the model's. Template text when it holds '{', '}' or a newline (vLLM's rule), else a
  // .jinja / tokenizer_config.json / .gguf path.
  std::string chat_template;
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

// Called between engine steps with the number of prompts finished so far; returning false
// aborts every unfinished request (its completions end with finish_reason "abort").
using ProgressCallback = std::function<bool(size_t num_finished)>;

// The tokenizer's size and special tokens (transformers' tokenizer attributes).
struct TokenizerInfo {
  int64_t vocab_size = 0;  // added tokens included
  std::optional<int32_t> bos_token_id;
  std::optional<int32_t> eos_token_id;
  std::optional<int32_t> pad_token_id;
  std::string bos_token;  // "" when absent
  std::string eos_token;
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
  // With on_step called between engine steps (progress, cancellation).
  std::vector<RequestOutput> generate(const std::vector<PromptInput>& prompts,
                                      const std::vector<SamplingParams>& params, const ProgressCallback& on_step);

  // Conversations ([{"role": ..., "content": ...}, ...]) through the chat template, then
  // generate(); a conversation that is malformed or that the template rejects fails alone.
  // Messages are read as vLLM's LLM.chat does: a string "role" each, content as text (text
  // parts joined by newlines, null as ""), tool call arguments given as JSON text parsed.
  std::vector<RequestOutput> chat(const std::vector<nlohmann::ordered_json>& conversations,
                                  const SamplingParams& params, const ChatOptions& options = {});
  // One SamplingParams per conversation.
  std::vector<RequestOutput> chat(const std::vector<nlohmann::ordered_json>& conversations,
                                  const std::vector<SamplingParams>& params, const ChatOptions& options,
                                  const ProgressCallback& on_step = {});
  // The rendered prompt text of one conversation, its messages as given (transformers'
  // apply_chat_template, with the tokenizer's bos_token/eos_token).
  Result<std::string> apply_chat_template(const nlohmann::ordered_json& messages, const ChatOptions& options = {});

  // One output per prompt. Each step runs every live beam of every prompt for one token in
  // one batch (the prefix cache makes the shared history free).
  // on_step is called between engine steps (with 0: a search's progress is not a count of
  // prompts); returning false aborts the search, whose outputs then carry an error.
  std::vector<BeamSearchOutput> beam_search(const std::vector<PromptInput>& prompts, const BeamSearchParams& params,
                                            const ProgressCallback& on_step = {});

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
  // The tokenizer as transformers' encode/decode; an error without one, or for ids outside
  // the vocabulary.
  Result<std::vector<int32_t>> encode(const std::string& text, bool add_special_tokens) const;
  Result<std::string> decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const;
  Result<TokenizerInfo> tokenizer_info() const;
  // A token's string in the vocabulary (byte-level BPE's mapped bytes, SentencePiece's pieces),
  // and back; nullopt for an id or a string the vocabulary does not have.
  Result<std::optional<std::string>> id_to_token(int32_t id) const;
  Result<std::optional<int32_t>> token_to_id(const std::string& token) const;

  struct Impl;

 private:
  explicit LLM(std::unique_ptr<Impl> impl);
  std::vector<RequestOutput> generate_batch(const std::vector<PromptInput>& prompts,
                                            const std::vector<SamplingParams>& params, bool progress,
                                            const ProgressCallback& on_step = {});
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
