// `tessera serve MODEL`: the OpenAI-compatible HTTP server (docs/server.md). Loads the
// model, plans the KV cache, starts the engine thread and the HTTP threads, and drains on
// SIGTERM/SIGINT: no new requests, in-flight ones finish until --shutdown-timeout, the rest
// are aborted, exit 0.
#include <sys/resource.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <filesystem>
#include <fstream>
#include <limits>

#include <utility>  // before Boost 1.74's awaitable.hpp, which needs std::exchange

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "cli/vllm_serve_flags.h"
#include "server/tokenizer_info.h"
#include "engine/async_engine.h"
#include "engine/engine_setup.h"
#include "engine/fake_engine_core.h"
#include "server/access_log.h"
#include "server/api_server.h"
#include "server/http_server.h"

#ifndef TESSERA_VERSION
#define TESSERA_VERSION "dev"
#endif

namespace tessera::cli {
namespace {

namespace net = server::net;

struct ServeOptions {
  EngineArgs engine;
  std::string model_positional;
  server::HttpServerOptions http;
  std::vector<std::string> api_keys;
  std::string served_model_name;
  std::string chat_template;
  std::string generation_config = "auto";
  size_t max_queued_requests = 4096;
  double shutdown_timeout = 30.0;
  int threads = 0;
  std::string activation_precision = "precise";
  bool fake_engine = false;
  bool enable_tokenizer_info_endpoint = false;
  server::ApiServerConfig api;  // the flags that are the server's as they are
  double fake_step_interval_ms = 0.0;
  std::string scheduling_policy = "fcfs";
  bool trust_request_chat_template = false;
  size_t max_response_bytes = 64u << 20;
  int request_workers = 0;  // 0: a quarter of the cores, 2 to 8
  UvicornFlags uvicorn;     // --uds and the access log's flags
};

// As many open files as the hard limit allows: every connection is one.
void raise_open_file_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

// Allocations of 1 MiB and more (rendered prompts, token lists, replies of one large
// request) are mapped on their own and unmapped when freed. glibc would otherwise raise
// this threshold after the first such free and serve them from its arenas, where they
// fragment the heap and keep the process's memory above where it was.
void pin_mmap_threshold() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
}

// --generation-config auto: sampling defaults of generation_config.json beside the model.
server::SamplingDefaults load_generation_config(const std::string& mode, const std::string& model) {
  server::SamplingDefaults d;
  if (mode != "auto") return d;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path path = fs::is_directory(model, ec) ? fs::path(model) : fs::path(model).parent_path();
  std::ifstream in(path / "generation_config.json");
  if (!in) return d;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object()) return d;
  auto num = [&](const char* k) -> std::optional<double> {
    auto it = j.find(k);
    if (it == j.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  if (auto v = num("temperature")) d.temperature = static_cast<float>(*v);
  if (auto v = num("top_p")) d.top_p = static_cast<float>(*v);
  if (auto v = num("top_k")) d.top_k = static_cast<int64_t>(*v);
  if (auto v = num("min_p")) d.min_p = static_cast<float>(*v);
  if (auto v = num("repetition_penalty")) d.repetition_penalty = static_cast<float>(*v);
  std::fprintf(stderr, "tessera: sampling defaults from %s\n", (path / "generation_config.json").c_str());
  return d;
}

int run_serve(ServeOptions o) {
  if (o.engine.model.empty()) o.engine.model = o.model_positional;
  if (o.engine.model.empty()) {
    std::fprintf(stderr, "error: serve needs a model (tessera serve MODEL)\n");
    return 2;
  }
  o.http.uds = o.uvicorn.uds;
  // The access log, as under `vllm serve`: on, unless turned off or below uvicorn's log level.
  o.http.access_log.enabled =
      !o.uvicorn.disable_access_log && server::access_log_shown_at(o.uvicorn.log_level).value_or(true);
  o.http.access_log.excluded_paths = server::parse_endpoint_list(o.uvicorn.excluded_endpoints);
  // A socket path that cannot work fails now, not after minutes of loading the model.
  if (!o.http.uds.empty()) {
    if (const std::string problem = server::HttpServer::unix_socket_path_problem(o.http.uds); !problem.empty()) {
      std::fprintf(stderr, "error: cannot listen on unix:%s: %s\n", o.http.uds.c_str(), problem.c_str());
      return 1;
    }
  }
  // A Hub name becomes its cached snapshot (downloaded when missing); the API names the model
  // as given, as vLLM's does.
  const std::string model_as_given = o.engine.model;
  auto sources = resolve_model_sources(o.engine);
  if (!sources.ok()) {
    std::fprintf(stderr, "error: %s\n", sources.error().c_str());
    return 1;
  }
  o.engine = std::move(*sources);
  set_threads(o.threads);
  apply_activation_precision(o.activation_precision);
  raise_open_file_limit();
  pin_mmap_threshold();
  std::signal(SIGPIPE, SIG_IGN);

  // The engine: a real model, or (--fake-engine) tokens as fast as asked, for overhead benchmarks.
  LoadedEngine loaded;
  std::unique_ptr<EngineCoreBase> core;
  if (o.fake_engine) {
    auto tok = tokenizer::load_tokenizer(o.engine.tokenizer.empty() ? o.engine.model : o.engine.tokenizer);
    if (!tok.ok()) {
      std::fprintf(stderr, "error: %s\n", tok.error().c_str());
      return 1;
    }
    loaded.tokenizer = std::move(*tok);
    std::vector<int32_t> eos;
    if (loaded.tokenizer->special_tokens().eos_id) eos.push_back(*loaded.tokenizer->special_tokens().eos_id);
    core = std::make_unique<FakeEngineCore>(static_cast<int64_t>(loaded.tokenizer->vocab_size()),
                                            o.engine.max_model_len > 0 ? o.engine.max_model_len : 8192,
                                            o.engine.max_num_seqs, eos, o.fake_step_interval_ms / 1000.0);
    std::fprintf(stderr, "tessera: fake engine (no model): tokens echo the prompt\n");
  } else {
    auto l = load_engine(o.engine);
    if (!l.ok()) {
      std::fprintf(stderr, "error: %s\n", l.error().c_str());
      return 1;
    }
    loaded = std::move(*l);
    const KvCachePlan& plan = loaded.core->plan();
    std::fprintf(stderr, "tessera: %s\n", plan.describe(loaded.core->max_model_len()).c_str());
    // vllm:cache_config_info's labels, under vLLM's names.
    o.api.cache_config_info = {
        {"block_size", std::to_string(plan.shape.block_size)},
        {"cache_dtype", "auto"},
        {"enable_prefix_caching", o.engine.enable_prefix_caching ? "True" : "False"},
        {"gpu_memory_utilization", std::to_string(o.engine.gpu_memory_utilization)},
        {"num_gpu_blocks", std::to_string(plan.shape.num_blocks - 1)},
        {"num_cpu_blocks", std::to_string(plan.num_host_blocks)},
    };
    if (!loaded.tokenizer) std::fprintf(stderr, "tessera: no tokenizer (%s): token-id prompts only\n", loaded.tokenizer_error.c_str());
    core = std::move(loaded.core);
  }

  std::unique_ptr<ChatTemplate> chat_template;
  const std::string template_source = o.chat_template.empty() ? default_chat_template_source(o.engine) : o.chat_template;
  if (!template_source.empty()) {
    auto t = ChatTemplate::from_file(template_source);
    if (t.ok()) {
      chat_template = std::make_unique<ChatTemplate>(std::move(*t));
    } else if (!o.chat_template.empty()) {
      std::fprintf(stderr, "error: --chat-template: %s\n", t.error().c_str());
      return 2;
    } else {
      std::fprintf(stderr, "tessera: no chat template (%s): /v1/chat/completions is unavailable\n", t.error().c_str());
    }
  }

  if (o.enable_tokenizer_info_endpoint) {
    const std::string config_path = default_chat_template_source(o.engine);
    const bool is_config = config_path.size() >= 21 && config_path.ends_with("tokenizer_config.json");
    o.api.tokenizer_info = server::tokenizer_info(is_config ? config_path : "", loaded.tokenizer.get(), chat_template.get());
  }
  AsyncEngine engine(std::move(core), loaded.tokenizer.get());
  server::ApiServerConfig config = o.api;
  config.served_model_name = o.served_model_name.empty() ? model_as_given : o.served_model_name;
  config.model_path = model_as_given;
  // vLLM's server takes its keys from VLLM_API_KEY when --api-key is not given: a deployment
  // that sets only the variable must not serve without a key.
  for (const std::string& key : o.api_keys) {
    if (!key.empty()) config.api_keys.push_back(key);
  }
  if (config.api_keys.empty()) {
    if (const char* env = std::getenv("VLLM_API_KEY"); env != nullptr && *env != '\0') config.api_keys.push_back(env);
  }
  config.max_queued_requests = o.max_queued_requests;
  config.sampling_defaults = load_generation_config(o.generation_config, o.engine.model);
  while (!config.root_path.empty() && config.root_path.back() == '/') config.root_path.pop_back();
  config.enable_priority = o.scheduling_policy == "priority";
  config.trust_request_chat_template = o.trust_request_chat_template;
  config.max_response_bytes = o.max_response_bytes;
  config.worker_threads =
      o.request_workers > 0 ? o.request_workers : std::clamp(static_cast<int>(std::thread::hardware_concurrency()) / 4, 2, 8);
  config.version = TESSERA_VERSION;
  server::ApiServer api(config, engine, loaded.tokenizer.get(), std::move(chat_template));
  server::HttpServer http(o.http, [&api](server::HttpExchange& ex) { return api.handle(ex); });
  uint16_t port = 0;
  try {
    port = http.listen();
  } catch (const std::exception& e) {
    if (o.http.uds.empty()) {
      std::fprintf(stderr, "error: cannot listen on %s:%u: %s\n", o.http.host.c_str(), o.http.port, e.what());
    } else {
      std::fprintf(stderr, "error: cannot listen on unix:%s: %s\n", o.http.uds.c_str(), e.what());
    }
    return 1;
  }

  net::signal_set signals(http.io_context(), SIGINT, SIGTERM);
  auto drain = [&]() -> net::awaitable<void> {
    std::fprintf(stderr, "tessera: shutting down: %zu requests in flight\n", engine.num_unfinished());
    api.start_draining();
    http.stop_accepting();
    net::steady_timer tick(http.io_context());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.shutdown_timeout);
    while (engine.num_unfinished() > 0 && std::chrono::steady_clock::now() < deadline) {
      tick.expires_after(std::chrono::milliseconds(20));
      co_await tick.async_wait(net::use_awaitable);
    }
    if (engine.num_unfinished() > 0) {
      std::fprintf(stderr, "tessera: aborting %zu requests after %.0f s\n", engine.num_unfinished(), o.shutdown_timeout);
      engine.abort_all();
    }
    // Let the last responses reach their clients.
    const auto flush_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (http.num_active() > 0 && std::chrono::steady_clock::now() < flush_deadline) {
      tick.expires_after(std::chrono::milliseconds(20));
      co_await tick.async_wait(net::use_awaitable);
    }
    http.stop();
  };
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    net::co_spawn(http.io_context(), drain(), net::detached);
    signals.async_wait([&](const boost::system::error_code& ec2, int) {
      if (!ec2) http.stop();  // a second signal: stop now
    });
  });
  const char* try_body = "-H 'Content-Type: application/json' -d '{\"prompt\": \"Hello\", \"max_tokens\": 16}'";
  if (o.http.uds.empty()) {
    std::fprintf(stderr, "tessera: listening on http://%s:%u\n", o.http.host.c_str(), port);
    std::fprintf(stderr, "tessera: try: curl http://%s:%u/v1/completions %s\n", o.http.host.c_str(), port, try_body);
  } else {  // vLLM's name of a Unix-socket listener
    std::fprintf(stderr, "tessera: listening on unix:%s\n", o.http.uds.c_str());
    std::fprintf(stderr, "tessera: try: curl --unix-socket %s http://localhost/v1/completions %s\n",
                 o.http.uds.c_str(), try_body);
  }
  std::fflush(stderr);
  http.run();
  api.shutdown();
  engine.abort_all();
  std::fprintf(stderr, "tessera: stopped\n");
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (see docs/server.md)");
  // A flag given twice keeps its last value, as under `vllm serve` (argparse): launch scripts
  // append overrides to a base command line. Options that collect several values say so.
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  // vLLM's name for the positional; "model" would clash with --model in CLI11 2.4.
  cmd->add_option("model_tag", o->model_positional,
                  "Model directory, .safetensors or .gguf file, or Hugging Face Hub name ORG/NAME (or --model)");
  // Off by default here: a request arriving while a step runs waits for the step already
  // queued behind it (what that costs in TTFT: docs/benchmarks.md, "Async scheduling").
  o->engine.async_scheduling = false;
  add_engine_options(cmd, &o->engine);
  cmd->get_option("--model")->required(false);
  cmd->add_option("--host", o->http.host, "Address to listen on (not with --uds)");
  cmd->add_option("--port", o->http.port, "Port (0: any free port; not with --uds)");
  cmd->add_option("--api-key", o->api_keys,
                  "Require Authorization: Bearer KEY on /v1, /v2, /inference, /cohere and /invocations (several "
                  "keys: repeat the flag; default: $VLLM_API_KEY, as vLLM)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->envname("TESSERA_API_KEY");
  cmd->add_option("--served-model-name", o->served_model_name, "Model name of the API (default: MODEL as given)");
  cmd->add_option("--chat-template", o->chat_template, "Chat template: .jinja, tokenizer_config.json or .gguf");
  cmd->add_option("--generation-config", o->generation_config,
                  "auto: sampling defaults from the model's generation_config.json; vllm: OpenAI's defaults")
      ->check(CLI::IsMember({"auto", "vllm"}));
  cmd->add_flag("--enable-force-include-usage", o->api.enable_force_include_usage,
                "End every stream with a usage chunk, asked for or not");
  cmd->add_flag("--enable-per-request-metrics", o->api.enable_per_request_metrics,
                "Put vLLM's per-request timings (\"metrics\": time to first token, queue time, mean inter-token "
                "latency, ...) in every reply, and in a stream's usage chunk");
  cmd->add_flag("--enable-server-load-tracking", o->api.enable_server_load_tracking,
                "GET /load answers {\"server_load\": N}, the completion and chat requests in progress");
  cmd->add_option("--max-logprobs", o->api.max_logprobs,
                  "The most logprobs (and prompt logprobs) per token a request may ask for (-1: the whole "
                  "vocabulary, which a request asks for with -1)")
      ->check(CLI::Range(int64_t{-1}, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--root-path", o->api.root_path,
                  "The path prefix a proxy serves the API under; requests may carry it or not");
  cmd->add_flag("--enable-tokenizer-info-endpoint", o->enable_tokenizer_info_endpoint,
                "GET /tokenizer_info: the tokenizer's configuration and chat template");
  cmd->add_flag("--enable-request-id-headers", o->api.enable_request_id_headers,
                "Answer every request with an X-Request-Id header: the client's, or a new id");
  cmd->add_flag("--return-tokens-as-token-ids", o->api.return_tokens_as_token_ids,
                "Name logprob tokens 'token_id:N' (for tokens that do not decode to text alone)");
  cmd->add_flag("--enable-auto-tool-choice", o->api.tools.enable_auto_tool_choice,
                "Let the model call tools when a request has tools and tool_choice \"auto\" (needs "
                "--tool-call-parser)");
  cmd->add_option("--tool-call-parser", o->api.tools.tool_call_parser,
                  "How the model writes tool calls: hermes (Qwen2.5, Qwen3, Hermes), llama3_json, mistral, "
                  "pythonic, qwen3_coder, deepseek_v3, ...")
      ->check(CLI::IsMember(server::tool_parser_names()));
  cmd->add_option("--reasoning-parser", o->api.tools.reasoning_parser,
                  "Put the model's thinking into reasoning_content: deepseek_r1, qwen3, deepseek_v3")
      ->check(CLI::IsMember(server::reasoning_parser_names()));
  cmd->add_flag("--enable-prompt-tokens-details", o->api.enable_prompt_tokens_details,
                "Report usage.prompt_tokens_details.cached_tokens (prompt tokens served by the prefix cache)");
  cmd->add_option("--max-request-body-bytes", o->http.max_body_bytes, "Larger bodies get 413");
  cmd->add_option("--request-timeout", o->http.request_timeout, "Seconds for a request to arrive (and per write)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--keep-alive-timeout", o->http.keep_alive_timeout, "Seconds an idle connection stays open")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-queued-requests", o->max_queued_requests, "Unfinished requests beyond which new ones get 503")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--shutdown-timeout", o->shutdown_timeout, "Seconds in-flight requests get to finish on SIGTERM")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--http-threads", o->http.threads, "Threads serving HTTP")->check(CLI::Range(1, 64));
  cmd->add_option("--allowed-origins", o->http.allowed_origins,
                  "Web origins whose pages may call the API (repeat or comma-separate; '*': any); requests "
                  "with another Origin header get 403 (default: none but the server's own loopback address)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->delimiter(',');
  cmd->add_option("--request-workers", o->request_workers,
                  "Threads that parse, render and tokenize requests and build replies, off the HTTP threads "
                  "(default: a quarter of the cores, 2 to 8)")
      ->check(CLI::Range(0, 256));
  cmd->add_option("--scheduling-policy", o->scheduling_policy,
                  "fcfs: first come, first served (requests with a non-zero priority get 400); priority: "
                  "requests' priority field orders them (lower first)")
      ->check(CLI::IsMember({"fcfs", "priority"}));
  cmd->add_flag("--trust-request-chat-template", o->trust_request_chat_template,
                "Render chat templates sent with requests (chat_template); without it they get 400");
  cmd->add_option("--max-response-bytes", o->max_response_bytes,
                  "Unstreamed replies larger than this get 400 (streamed ones are not held in memory)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", o->threads, "CPU threads of the model (default: all cores)");
  add_activation_precision_option(cmd, &o->activation_precision);
  cmd->add_flag("--fake-engine", o->fake_engine,
                "No model: each running request gets one token per step (the prompt's, repeated); for overhead benchmarks");
  cmd->add_option("--fake-step-interval-ms", o->fake_step_interval_ms,
                  "With --fake-engine: at most one step per this many ms (0: as fast as possible)")
      ->check(CLI::NonNegativeNumber);
  add_vllm_serve_flags(cmd, &o->uvicorn);
  add_vllm_engine_flags(cmd, &o->engine);
  cmd->callback([o, exit_code] {
    if (o->api.tools.enable_auto_tool_choice && o->api.tools.tool_call_parser.empty()) {
      throw CLI::ValidationError("--enable-auto-tool-choice", "requires --tool-call-parser");
    }
    *exit_code = run_serve(*o);
  });
}

}  // namespace tessera::cli
