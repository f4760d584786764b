// ApiServer: the OpenAI-compatible routes over an AsyncEngine. Requests are parsed,
// rendered and tokenized on the worker pool (the HTTP threads only do I/O); generation runs
// on the engine thread; each request's stream wakes its connection, which writes SSE events
// (or, unstreamed, the final JSON, assembled on a worker).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "engine/async_engine.h"
#include "server/chat_tools.h"
#include "server/http_server.h"
#include "server/openai_protocol.h"
#include "server/worker_pool.h"
#include "tessera/llm.h"
#include "tokenizer/tokenizer.h"

namespace tessera::server {

struct ApiServerConfig {
  std::string served_model_name;
  std::string model_path;                 // reported as the model's root
  std::vector<std::string> api_keys;      // Bearer tokens the generation routes accept (none: no key needed)
  size_t max_queued_requests = 4096;      // more unfinished sequences (prompts x n) than this: 503
  size_t max_seqs_per_request = 1024;     // prompts x n of one request; more: 400
  SamplingDefaults sampling_defaults;     // from --generation-config
  bool enable_prompt_tokens_details = false;  // usage.prompt_tokens_details.cached_tokens
  bool enable_request_id_headers = false;     // X-Request-Id on every response: the client's, or a new one
  bool enable_force_include_usage = false;    // streams end with usage whether or not they ask for it
  bool enable_per_request_metrics = false;    // replies (and a stream's usage chunk) carry vLLM's "metrics"
  bool enable_server_load_tracking = false;   // GET /load: the requests being served
  std::string root_path;                      // a prefix a proxy may leave on every path ("" : none)
  int64_t max_logprobs = 20;                  // --max-logprobs: the most (prompt) logprobs a request may ask for (-1: the vocabulary)
  std::vector<std::pair<std::string, std::string>> cache_config_info;  // vllm:cache_config_info's labels
  std::optional<nlohmann::ordered_json> tokenizer_info;  // GET /tokenizer_info's answer; unset: no such route
  bool return_tokens_as_token_ids = false;    // logprob tokens as "token_id:N" unless a request says otherwise
  bool enable_priority = false;           // --scheduling-policy priority: requests may set priority
  bool trust_request_chat_template = false;  // --trust-request-chat-template
  size_t max_response_bytes = 64u << 20;  // an unstreamed reply larger than this: 400
  size_t max_rendered_prompt_bytes = 16u << 20;  // a chat template's output
  uint64_t max_render_steps = 4'000'000;  // a chat template's work (jinja::RenderLimits::max_steps)
  int worker_threads = 2;                 // parse, render, tokenize and build replies off the I/O threads
  size_t max_pending_work = 512;          // requests queued for the workers; more: 503
  size_t max_pending_heavy_work = 64;     // the same for work on large inputs
  ChatToolsConfig tools;                  // tool-call and reasoning parsing of chat replies
  std::string version;
};

// One prompt's search of a use_beam_search request (vLLM's extra; n is the beam width).
struct BeamSearchRequest {
  std::vector<int32_t> prompt_ids;
  BeamSearchParams params;
  int32_t priority = 0;
  bool include_stop_str_in_output = false;  // the EOS token stays in a finished beam's tokens
  bool skip_special_tokens = true;          // of the beams' text
};

// A chat request rendered, tokenized and checked, ready for the engine.
struct PreparedChat {
  ChatRequest req;
  std::string prompt;  // rendered
  std::vector<int32_t> prompt_ids;
  SamplingParams params;
  size_t fixed_reply_bytes = 0;          // the least the reply takes, from the request alone
  std::vector<BeamSearchRequest> beams;  // use_beam_search: the one search
  ChatToolPlan tool_plan;                // what tool_choice asks of the reply
};

class ApiServer {
 public:
  // tok and chat_template may be null (token-id prompts only / no chat).
  ApiServer(ApiServerConfig config, AsyncEngine& engine, const tokenizer::Tokenizer* tok,
            std::unique_ptr<ChatTemplate> chat_template);

  net::awaitable<void> handle(HttpExchange& ex);
  // From now on generation requests get 503 (in-flight ones go on).
  void start_draining() { draining_.store(true); }
  // Joins the workers; call once the HTTP threads have stopped, before their io_context goes.
  void shutdown() {
    light_workers_.shutdown();
    heavy_workers_.shutdown();
  }

 private:
  net::awaitable<void> route(HttpExchange& ex);
  net::awaitable<void> completions(HttpExchange& ex);
  net::awaitable<void> chat_completions(HttpExchange& ex);
  // POST /v1/chat/completions/batch (vLLM's): one reply whose choice i answers conversation i.
  net::awaitable<void> chat_completions_batch(HttpExchange& ex);
  // A chat request's preparation in two halves (a small body can render a large prompt,
  // whose tokenizing then runs with the large work): checks and rendering; then tokenizing,
  // max_tokens and the engine's checks of the prompt. Throw a 400.
  PreparedChat render_chat_request(ChatRequest req) const;
  void tokenize_chat_request(PreparedChat* p) const;
  net::awaitable<void> tokenize(HttpExchange& ex);
  net::awaitable<void> detokenize(HttpExchange& ex);
  // POST /invocations (SageMaker's route): a chat request when the body has messages, else a
  // completion request when it has a prompt.
  net::awaitable<void> invocations(HttpExchange& ex);
  // /tokenize in two steps (a small body can render a large prompt), and /detokenize.
  struct TokenizeInput {
    std::string text;
    bool add_special_tokens = true;
    bool return_token_strs = false;
    const char* param = "prompt";
  };
  TokenizeInput tokenize_input(const std::string& request_body) const;
  std::string tokenize_reply(const TokenizeInput& in) const;
  std::string detokenize_reply(const std::string& request_body) const;
  // Work on inputs (a body, a rendered prompt, a reply) up to kLightWorkBytes runs on the
  // light workers; larger work on the heavy ones (fewer, niced, a shorter queue), so small
  // requests never wait behind large ones.
  static constexpr size_t kLightWorkBytes = 64u << 10;
  WorkerPool& lane(size_t input_bytes);
  net::awaitable<void> respond_json(HttpExchange& ex, const nlohmann::ordered_json& body);

  void check_model(const std::optional<std::string>& model) const;
  // A generation request's model, its priority (non-zero needs --scheduling-policy priority,
  // else any client could starve the rest) and its prompts x n against max_seqs_per_request.
  void check_request(const std::optional<std::string>& model, int32_t priority, size_t num_prompts, int64_t n) const;
  // vLLM's -1 (kAllLogprobs as parsed) made the vocabulary's size, in a request's counts and
  // its sampling parameters.
  void resolve_all_logprobs(int64_t* logprobs, int64_t* prompt_logprobs, SamplingParams* params) const;
  // --max-logprobs (-1: the vocabulary) against what a request asks for (-1: not asked), with
  // vLLM's texts.
  void check_logprobs(int64_t logprobs, int64_t prompt_logprobs) const;
  // New sequences against what is unfinished and max_queued_requests.
  void check_capacity(size_t new_seqs) const;
  std::vector<int32_t> encode(const std::string& text, bool add_special_tokens, const char* param) const;
  // The chat prompt text of a request's messages (or a /tokenize body's).
  std::string render_chat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                          const nlohmann::ordered_json& kwargs, bool add_generation_prompt,
                          bool continue_final_message, const std::optional<std::string>& template_source) const;
  // A prompt's max_tokens when the request gave none, and the check of prompt + max_tokens.
  void fit_max_tokens(size_t prompt_len, bool given, SamplingParams* params) const;
  // vLLM's truncate_prompt_tokens: keeps the last k tokens (-1: max_model_len), or the first
  // with keep_first (truncation_side "right"); k past the context is refused. Returns whether
  // it cut anything.
  bool truncate_prompt(std::vector<int32_t>* ids, std::optional<int64_t> k, bool keep_first) const;
  // The request's bad_words as token sequences (needs the tokenizer).
  void resolve_bad_words(SamplingParams* params) const;

  // vLLM's use_beam_search (src/server/serving_beam_search.cc). The search of a prompt whose
  // request is parsed and its max_tokens fitted, checked as vLLM checks it (each step asks for
  // 2 * n logprobs, which --max-logprobs bounds), and the prompt as the engine checks each
  // step's. Throws a 400.
  BeamSearchRequest beam_search_request(std::vector<int32_t> prompt_ids, const SamplingParams& params,
                                        double length_penalty, int32_t priority) const;
  // Runs the searches side by side, each step through the engine without blocking a thread;
  // the client leaving aborts the step's requests. At the end hands on_batch(search, batch)
  // each search's finished batch: one delta per beam (index: rank, best first; text, tokens,
  // their steps' candidates as top logprobs, finish_reason "stop" (EOS) or "length"), or the
  // error. Streaming, *sse (what the handler has ready first, then what on_batch adds) is
  // written. False when the client left.
  net::awaitable<bool> run_beam_search(HttpExchange& ex, const std::vector<BeamSearchRequest>& searches,
                                       const std::function<void(size_t, StreamBatch&)>& on_batch, std::string* sse);

  ApiServerConfig config_;
  AsyncEngine& engine_;
  std::atomic<int64_t> server_load_{0};  // completion and chat requests in progress (--enable-server-load-tracking)
  const tokenizer::Tokenizer* tok_;
  std::unique_ptr<ChatTemplate> chat_template_;
  WorkerPool light_workers_;
  WorkerPool heavy_workers_;
  std::atomic<bool> draining_{false};
  std::atomic<uint64_t> next_id_{1};
  const int64_t created_;
};

}  // namespace tessera::server
