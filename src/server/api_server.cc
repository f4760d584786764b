#include "server/api_server.h"

#include <cctype>

#include <algorithm>
#include <cstdint>

#include "engine/bad_words.h"
#include "server/chat_prompt.h"
#include "server/prometheus.h"
#include "server/serving_common.h"

namespace tessera::server {

namespace {

// Compares without an early exit, so the time taken says nothing about the key.
bool constant_time_equal(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

// "Bearer KEY" (the scheme in any case, as vLLM reads it) with KEY one of keys. Every key
// is compared, each without an early exit.
bool bearer_matches(std::string_view header, const std::vector<std::string>& keys) {
  const size_t space = header.find(' ');
  if (space == std::string_view::npos) return false;
  std::string scheme(header.substr(0, space));
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string_view given = header.substr(space + 1);
  bool match = false;
  for (const std::string& key : keys) match |= constant_time_equal(given, key);
  return scheme == "bearer" && match;
}

// The routes the API key guards: vLLM's (every path under /v1, /v2, /inference and /cohere),
// and /invocations, which generates as /v1 does. Probes, /metrics, /version, /tokenize and
// the like stay open, as under vLLM, so scrapers and gateways work unchanged.
bool needs_api_key(std::string_view path) {
  for (std::string_view prefix : {"/v1", "/v2", "/inference", "/cohere", "/invocations"}) {
    if (path.starts_with(prefix)) return true;
  }
  return false;
}

std::string_view path_of(std::string_view target) {
  const size_t q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

}  // namespace

ApiServer::ApiServer(ApiServerConfig config, AsyncEngine& engine, const tokenizer::Tokenizer* tok,
                     std::unique_ptr<ChatTemplate> chat_template)
    : config_(std::move(config)), engine_(engine), tok_(tok), chat_template_(std::move(chat_template)),
      light_workers_("request", std::max(1, config_.worker_threads), config_.max_pending_work),
      heavy_workers_("large-request", std::max(1, config_.worker_threads / 2), config_.max_pending_heavy_work,
                     /*nice=*/10, /*trim_every=*/std::chrono::seconds(5)),
      created_(unix_time()) {}

net::awaitable<void> ApiServer::respond_json(HttpExchange& ex, const Json& body) {
  co_await ex.respond(http::status::ok, "application/json", dump(body));
}

namespace {

// The client's X-Request-Id when it is a plausible id (visible ASCII, at most 256 bytes), else
// a new one.
std::string request_id_of(const HttpRequest& req) {
  auto it = req.find("X-Request-Id");
  if (it != req.end()) {
    const std::string_view v(it->value().data(), it->value().size());
    const bool plausible = !v.empty() && v.size() <= 256 &&
                           std::all_of(v.begin(), v.end(), [](char c) { return c > 0x20 && c < 0x7f; });
    if (plausible) return std::string(v);
  }
  return random_id("");
}

// The ORCA load report a client asks for with endpoint-load-metrics-format (TEXT or JSON,
// any case), as vLLM attaches it to completion and chat answers: the KV cache's usage and the
// requests waiting. Empty for another format or none.
std::string orca_load_report(const HttpRequest& req, const EngineMetrics& m) {
  auto it = req.find("endpoint-load-metrics-format");
  if (it == req.end()) return "";
  std::string format(it->value().data(), it->value().size());
  for (char& c : format) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const Json usage = m.kv_cache_usage;  // JSON's number formatting for both
  const std::string waiting = std::to_string(m.num_requests_waiting);
  if (format == "text") {
    return "TEXT named_metrics.kv_cache_usage_perc=" + usage.dump() + ", named_metrics.num_requests_waiting=" + waiting;
  }
  if (format == "json") {
    return "JSON " + Json{{"named_metrics", {{"kv_cache_usage_perc", m.kv_cache_usage},
                                             {"num_requests_waiting", m.num_requests_waiting}}}}.dump();
  }
  return "";
}

// Counts a request in the server's load while it lives.
class LoadCount {
 public:
  explicit LoadCount(std::atomic<int64_t>* load) : load_(load) {
    if (load_ != nullptr) load_->fetch_add(1);
  }
  ~LoadCount() {
    if (load_ != nullptr) load_->fetch_sub(1);
  }
  LoadCount(const LoadCount&) = delete;
  LoadCount& operator=(const LoadCount&) = delete;

 private:
  std::atomic<int64_t>* load_;
};

}  // namespace

net::awaitable<void> ApiServer::handle(HttpExchange& ex) {
  if (config_.enable_request_id_headers) ex.add_response_header("X-Request-Id", request_id_of(ex.request()));
  std::optional<ApiError> error;
  try {
    co_await route(ex);
  } catch (const ApiError& e) {
    error = e;
  }
  if (error) co_await ex.respond(error->status, "application/json", error_body(error->status, error->what(), error->param));
}

net::awaitable<void> ApiServer::route(HttpExchange& ex) {
  const HttpRequest& req = ex.request();
  std::string_view path = path_of(std::string_view(req.target().data(), req.target().size()));
  // --root-path: a proxy may forward paths with the prefix it serves us under.
  const std::string& root = config_.root_path;
  if (!root.empty() && path.size() > root.size() && path.substr(0, root.size()) == root &&
      path[root.size()] == '/') {
    path.remove_prefix(root.size());
  }
  const http::verb method = req.method();
  // Liveness probes answer without the key, and without work (load balancers poll them).
  if (path == "/health" || path == "/ping") {
    if (method != http::verb::get && !(path == "/ping" && method == http::verb::post)) {
      throw ApiError(http::status::method_not_allowed, std::string(path) + " takes GET");
    }
    co_await ex.respond(http::status::ok, "application/json", "");
    co_return;
  }
  if (!config_.api_keys.empty() && needs_api_key(path) && method != http::verb::options) {
    auto it = req.find(http::field::authorization);
    std::string_view header;  // Boost 1.83's beast::string_view is its own type
    if (it != req.end()) header = std::string_view(it->value().data(), it->value().size());
    if (!bearer_matches(header, config_.api_keys)) {
      throw ApiError(http::status::unauthorized, "missing or invalid API key (Authorization: Bearer KEY)");
    }
  }
  if (path == "/tokenizer_info" && config_.tokenizer_info) {
    if (method != http::verb::get) throw ApiError(http::status::method_not_allowed, "/tokenizer_info takes GET");
    co_await respond_json(ex, *config_.tokenizer_info);
    co_return;
  }
  if (path == "/load" && config_.enable_server_load_tracking) {
    if (method != http::verb::get) throw ApiError(http::status::method_not_allowed, "/load takes GET");
    const Json load = {{"server_load", server_load_.load()}};
    co_await respond_json(ex, load);
    co_return;
  }
  net::awaitable<void> (ApiServer::*post)(HttpExchange&) = nullptr;
  if (path == "/v1/completions") post = &ApiServer::completions;
  if (path == "/v1/chat/completions") post = &ApiServer::chat_completions;
  if (path == "/v1/chat/completions/batch") post = &ApiServer::chat_completions_batch;
  if (path == "/tokenize") post = &ApiServer::tokenize;
  if (path == "/detokenize") post = &ApiServer::detokenize;
  if (path == "/invocations") post = &ApiServer::invocations;
  if (post != nullptr) {
    if (method != http::verb::post) throw ApiError(http::status::method_not_allowed, std::string(path) + " takes POST");
    // The load vLLM counts: generation requests from arrival to their last byte.
    const bool counted = post != &ApiServer::tokenize && post != &ApiServer::detokenize;
    const LoadCount count(counted ? &server_load_ : nullptr);
    if (counted) {
      if (std::string report = orca_load_report(req, engine_.metrics()); !report.empty()) {
        ex.add_response_header("endpoint-load-metrics", std::move(report));
      }
    }
    co_await (this->*post)(ex);
    co_return;
  }
  const bool get = method == http::verb::get;
  if (path == "/v1/models" || path == "/version" || path == "/metrics") {
    if (!get) throw ApiError(http::status::method_not_allowed, std::string(path) + " takes GET");
  }
  if (path == "/v1/models") {
    Json model = {{"id", config_.served_model_name},     {"object", "model"},
                  {"created", created_},                  {"owned_by", "tessera"},
                  {"root", config_.model_path},           {"parent", nullptr},
                  {"max_model_len", engine_.max_model_len()}};
    const Json list = {{"object", "list"}, {"data", Json::array({model})}};
    co_await respond_json(ex, list);
  } else if (path == "/version") {
    const Json version = {{"version", config_.version}};
    co_await respond_json(ex, version);
  } else if (path == "/metrics") {
    co_await ex.respond(http::status::ok, "text/plain; version=0.0.4; charset=utf-8",
                        render_prometheus(engine_.metrics(), config_.served_model_name, config_.cache_config_info));
  } else {
    throw ApiError(http::status::not_found, "no route " + std::string(path));
  }
}

void ApiServer::check_model(const std::optional<std::string>& model) const {
  if (model && *model != config_.served_model_name) {
    throw ApiError(http::status::not_found, "the model `" + *model + "` does not exist", "model");
  }
}

void ApiServer::check_request(const std::optional<std::string>& model, int32_t priority, size_t num_prompts,
                              int64_t n) const {
  check_model(model);
  if (priority != 0 && !config_.enable_priority) {
    bad_request("priority scheduling is not enabled: the server must run with --scheduling-policy priority",
                "priority");
  }
  const size_t seqs = num_prompts * static_cast<size_t>(std::max<int64_t>(n, 1));
  if (seqs > config_.max_seqs_per_request) {
    bad_request("the request asks for " + std::to_string(seqs) + " sequences (prompts x n); at most " +
                    std::to_string(config_.max_seqs_per_request) + " per request",
                "n");
  }
}

void ApiServer::resolve_all_logprobs(int64_t* logprobs, int64_t* prompt_logprobs, SamplingParams* params) const {
  for (int64_t* k : {logprobs, prompt_logprobs, &params->logprobs, &params->prompt_logprobs}) {
    if (*k == kAllLogprobs) *k = engine_.vocab_size();
  }
}

void ApiServer::check_logprobs(int64_t logprobs, int64_t prompt_logprobs) const {
  const int64_t most = config_.max_logprobs == -1 ? engine_.vocab_size() : config_.max_logprobs;
  if (logprobs > most) {
    bad_request("Requested sample logprobs of " + std::to_string(logprobs) + ", which is greater than max allowed: " +
                    std::to_string(most),
                "logprobs");
  }
  if (prompt_logprobs > most) {
    bad_request("Requested prompt logprobs of " + std::to_string(prompt_logprobs) +
                    ", which is greater than max allowed: " + std::to_string(most),
                "prompt_logprobs");
  }
}

void ApiServer::check_capacity(size_t new_seqs) const {
  if (draining_.load()) throw ApiError(http::status::service_unavailable, "the server is shutting down");
  const size_t unfinished = engine_.num_unfinished_seqs();
  if (unfinished + new_seqs > config_.max_queued_requests) {
    throw ApiError(http::status::service_unavailable,
                   "the server is overloaded: " + std::to_string(unfinished) + " sequences are in progress and " +
                       std::to_string(new_seqs) + " more were asked for (limit " +
                       std::to_string(config_.max_queued_requests) + "); retry later");
  }
}

std::vector<int32_t> ApiServer::encode(const std::string& text, bool add_special_tokens, const char* param) const {
  if (tok_ == nullptr) bad_request("this model has no tokenizer: send token ids", param);
  auto ids = tok_->encode(text, add_special_tokens);
  if (!ids.ok()) bad_request(ids.error(), param);
  return std::move(*ids);
}

std::string ApiServer::render_chat(const Json& messages, const Json& tools, const Json& kwargs,
                                   bool add_generation_prompt, bool continue_final_message,
                                   const std::optional<std::string>& template_source) const {
  std::unique_ptr<ChatTemplate> own;
  const ChatTemplate* tmpl = chat_template_.get();
  if (template_source && !config_.trust_request_chat_template) {
    bad_request("chat_template was sent with the request, but this server only renders its own template "
                "(start it with --trust-request-chat-template to accept request templates)",
                "chat_template");
  }
  if (template_source) {
    auto t = ChatTemplate::from_string(*template_source, tok_ ? std::optional(tok_->special_tokens().bos_token) : std::nullopt,
                                       tok_ ? std::optional(tok_->special_tokens().eos_token) : std::nullopt);
    if (!t.ok()) bad_request("chat_template: " + t.error(), "chat_template");
    own = std::make_unique<ChatTemplate>(std::move(*t));
    tmpl = own.get();
  }
  if (tmpl == nullptr) bad_request("this model has no chat template; start the server with --chat-template", "messages");
  jinja::RenderLimits limits;
  limits.max_output_bytes = config_.max_rendered_prompt_bytes;
  limits.max_string_bytes = config_.max_rendered_prompt_bytes;
  limits.max_steps = config_.max_render_steps;
  auto text = render_chat_prompt(*tmpl, messages, tools, kwargs, add_generation_prompt, continue_final_message, limits);
  if (!text.ok()) bad_request("the chat template failed: " + text.error(), "messages");
  return std::move(*text);
}

void ApiServer::resolve_bad_words(SamplingParams* params) const {
  if (params->bad_words.empty()) return;
  if (tok_ == nullptr) bad_request("bad_words need the model's tokenizer", "bad_words");
  if (Status s = tessera::resolve_bad_words(params, *tok_); !s.ok()) bad_request(s.message(), "bad_words");
}

bool ApiServer::truncate_prompt(std::vector<int32_t>* ids, std::optional<int64_t> k, bool keep_first) const {
  if (!k) return false;
  const int64_t limit = engine_.max_model_len();
  if (*k > limit) {
    bad_request("truncate_prompt_tokens (" + std::to_string(*k) + ") is larger than this model's maximum context length (" +
                    std::to_string(limit) + ")",
                "truncate_prompt_tokens");
  }
  const size_t keep = static_cast<size_t>(*k == -1 ? limit : *k);
  if (ids->size() <= keep) return false;
  if (keep_first) {
    ids->resize(keep);
  } else {
    ids->erase(ids->begin(), ids->end() - static_cast<std::ptrdiff_t>(keep));
  }
  return true;
}

void ApiServer::fit_max_tokens(size_t prompt_len, bool given, SamplingParams* params) const {
  const int64_t limit = engine_.max_model_len();
  const int64_t room = limit - static_cast<int64_t>(prompt_len);
  if (room < 1) {
    bad_request("this model's maximum context length is " + std::to_string(limit) + " tokens, but the prompt has " +
                    std::to_string(prompt_len) + " tokens; shorten it",
                "prompt");
  }
  if (!given) {
    params->max_tokens = std::min<int64_t>(params->max_tokens, room);
    params->min_tokens = std::min(params->min_tokens, params->max_tokens);
    return;
  }
  if (params->max_tokens > room) {
    bad_request("this model's maximum context length is " + std::to_string(limit) + " tokens, but " +
                    std::to_string(prompt_len + params->max_tokens) + " were requested (" + std::to_string(prompt_len) +
                    " in the prompt, " + std::to_string(params->max_tokens) + " to generate); lower max_tokens",
                "max_tokens");
  }
}

WorkerPool& ApiServer::lane(size_t input_bytes) {
  return input_bytes <= kLightWorkBytes ? light_workers_ : heavy_workers_;
}

net::awaitable<void> ApiServer::tokenize(HttpExchange& ex) {
  const std::string& body = ex.request().body();
  TokenizeInput in = co_await lane(body.size()).run([&] { return tokenize_input(body); });
  std::string reply = co_await lane(in.text.size()).run([&] { return tokenize_reply(in); });
  co_await ex.respond(http::status::ok, "application/json", std::move(reply));
}

ApiServer::TokenizeInput ApiServer::tokenize_input(const std::string& request_body) const {
  const Json body = parse_json_body(request_body);
  if (auto m = body.find("model"); m != body.end() && !m->is_null()) {
    if (!m->is_string()) bad_request("model must be a string", "model");
    check_model(m->get<std::string>());
  }
  TokenizeInput in;
  if (body.contains("messages")) {
    const ChatRequest chat = parse_chat_request(body, {});
    in.text = render_chat(chat.messages, chat.tools, chat.chat_template_kwargs, chat.add_generation_prompt,
                          chat.continue_final_message, chat.chat_template);
    in.add_special_tokens = chat.add_special_tokens;
    in.param = "messages";
  } else {
    auto p = body.find("prompt");
    if (p == body.end() || !p->is_string()) bad_request("prompt (a string) or messages is required", "prompt");
    if (auto a = body.find("add_special_tokens"); a != body.end() && !a->is_null()) {
      if (!a->is_boolean()) bad_request("add_special_tokens must be a boolean", "add_special_tokens");
      in.add_special_tokens = a->get<bool>();
    }
    in.text = p->get<std::string>();
  }
  if (auto r = body.find("return_token_strs"); r != body.end() && r->is_boolean()) in.return_token_strs = r->get<bool>();
  return in;
}

std::string ApiServer::tokenize_reply(const TokenizeInput& in) const {
  const std::vector<int32_t> ids = encode(in.text, in.add_special_tokens, in.param);
  Json strs = nullptr;
  if (in.return_token_strs) {
    strs = Json::array();
    for (int32_t id : ids) strs.push_back(tok_->id_to_token(id).value_or(""));
  }
  const Json out = {{"count", ids.size()},
                    {"max_model_len", engine_.max_model_len()},
                    {"tokens", ids},
                    {"token_strs", std::move(strs)}};
  return dump(out);
}

net::awaitable<void> ApiServer::invocations(HttpExchange& ex) {
  const std::string& body = ex.request().body();
  enum class Kind { kChat, kCompletion, kNone };
  const Kind kind = co_await lane(body.size()).run([&] {
    const Json j = parse_json_body(body);
    if (j.contains("messages")) return Kind::kChat;
    if (j.contains("prompt") || j.contains("prompt_embeds")) return Kind::kCompletion;
    return Kind::kNone;
  });
  if (kind == Kind::kChat) {
    co_await chat_completions(ex);
  } else if (kind == Kind::kCompletion) {
    co_await completions(ex);
  } else {
    bad_request("Cannot find suitable handler for request. Expected one of: ['ChatCompletionRequest', "
                "'CompletionRequest']");
  }
}

net::awaitable<void> ApiServer::detokenize(HttpExchange& ex) {
  const std::string& body = ex.request().body();
  std::string reply = co_await lane(body.size()).run([&] { return detokenize_reply(body); });
  co_await ex.respond(http::status::ok, "application/json", std::move(reply));
}

std::string ApiServer::detokenize_reply(const std::string& request_body) const {
  const Json body = parse_json_body(request_body);
  if (auto m = body.find("model"); m != body.end() && !m->is_null()) {
    if (!m->is_string()) bad_request("model must be a string", "model");
    check_model(m->get<std::string>());
  }
  auto t = body.find("tokens");
  if (t == body.end() || !t->is_array()) bad_request("tokens (a list of token ids) is required", "tokens");
  std::vector<int32_t> ids;
  for (const Json& v : *t) {
    if (!v.is_number_integer() && !v.is_number_unsigned()) bad_request("tokens must be integers", "tokens");
    // nlohmann keeps non-negative integers as unsigned: read both kinds without wrapping.
    const bool huge = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
    const int64_t id = huge ? -1 : v.get<int64_t>();
    if (huge || id < 0 || id >= engine_.vocab_size()) {
      bad_request("token id " + v.dump() + " is out of vocabulary [0, " + std::to_string(engine_.vocab_size()) + ")",
                  "tokens");
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  if (tok_ == nullptr) bad_request("this model has no tokenizer", "tokens");
  auto text = tok_->decode(ids, /*skip_special_tokens=*/false);
  if (!text.ok()) bad_request(text.error(), "tokens");
  const Json out = {{"prompt", *text}};
  return dump(out);
}

}  // namespace tessera::server
