// libFuzzer target, structure-aware: builds OpenAI request bodies (completions and chat,
// with messages, content parts, tool calls whose arguments are JSON text nested to any
// depth, tools, template kwargs, sampling fields of every type), serializes them, sometimes
// damages the bytes, and runs what the server runs on them: parse_json_body, the request
// parsers, and chat rendering through real model templates (or a template from the request,
// as a server with --trust-request-chat-template does). Every input must end in a parsed
// request that keeps the parsers' promises or a 400 with a message; never a crash, another
// exception, a hang, or output past the render limits.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "server/chat_prompt.h"
#include "server/openai_protocol.h"

namespace {

using Json = nlohmann::ordered_json;
using tessera::ChatTemplate;
namespace server = tessera::server;

// Templates of real models (tests/data/chat_templates), loaded once.
const std::vector<std::unique_ptr<ChatTemplate>>& templates() {
  static const auto kTemplates = [] {
    std::vector<std::unique_ptr<ChatTemplate>> out;
    const auto dir = std::filesystem::path(__FILE__).parent_path().parent_path() / "tests/data/chat_templates";
    for (const char* name : {"Qwen-Qwen2.5-7B-Instruct.json", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.json",
                             "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.json", "google-gemma-2-2b-it.json",
                             "CohereForAI-c4ai-command-r7b-12-2024-tool_use.json"}) {
      std::ifstream in(dir / name);
      const Json j = Json::parse(in, nullptr, false);
      if (!j.is_object() || !j.contains("template")) continue;
      auto t = ChatTemplate::from_string(j["template"].get<std::string>(), "<s>", "</s>");
      if (t.ok()) out.push_back(std::make_unique<ChatTemplate>(std::move(*t)));
    }
    if (out.empty()) __builtin_trap();  // the fuzzer would test nothing of rendering
    return out;
  }();
  return kTemplates;
}

class RequestGenerator {
 public:
  explicit RequestGenerator(FuzzedDataProvider& p) : p_(p) {}

  Json completion_body() {
    Json b = Json::object();
    if (p_.ConsumeBool()) b["model"] = pick_value(1);
    switch (p_.ConsumeIntegralInRange(0, 4)) {
      case 0: b["prompt"] = text(); break;
      case 1: b["prompt"] = token_ids(); break;
      case 2: {
        Json list = Json::array();
        for (int i = p_.ConsumeIntegralInRange(0, 6); i > 0; --i) list.push_back(p_.ConsumeBool() ? Json(text()) : token_ids());
        b["prompt"] = std::move(list);
        break;
      }
      case 3: b["prompt"] = value(3); break;
      default: break;  // missing
    }
    for (const char* f : {"echo", "logprobs", "best_of", "suffix", "max_tokens"}) maybe_field(b, f);
    sampling_fields(b);
    return b;
  }

  Json chat_body() {
    Json b = Json::object();
    Json messages = Json::array();
    for (int i = p_.ConsumeIntegralInRange(0, 6); i > 0; --i) messages.push_back(message());
    b["messages"] = p_.ConsumeIntegralInRange(0, 15) == 0 ? value(2) : std::move(messages);
    if (p_.ConsumeBool()) {
      Json tools = Json::array();
      for (int i = p_.ConsumeIntegralInRange(0, 3); i > 0; --i) {
        tools.push_back(Json{{"type", "function"},
                             {"function", Json{{"name", text()}, {"description", text()}, {"parameters", value(4)}}}});
      }
      b["tools"] = p_.ConsumeIntegralInRange(0, 7) == 0 ? value(2) : std::move(tools);
    }
    if (p_.ConsumeBool()) b["chat_template_kwargs"] = p_.ConsumeBool() ? Json{{"enable_thinking", p_.ConsumeBool()}} : value(3);
    if (p_.ConsumeIntegralInRange(0, 7) == 0) b["chat_template"] = template_text();
    for (const char* f : {"add_generation_prompt", "continue_final_message", "tool_choice", "logprobs",
                          "top_logprobs", "max_completion_tokens", "max_tokens"}) {
      maybe_field(b, f);
    }
    sampling_fields(b);
    return b;
  }

 private:
  void sampling_fields(Json& b) {
    for (const char* f : {"n", "temperature", "top_p", "top_k", "min_p", "seed", "stop", "stop_token_ids",
                          "logit_bias", "min_tokens", "ignore_eos", "allowed_token_ids", "bad_words", "priority",
                          "stream", "stream_options", "prompt_logprobs", "truncate_prompt_tokens",
                          "presence_penalty", "frequency_penalty", "repetition_penalty", "add_special_tokens",
                          "skip_special_tokens", "include_stop_str_in_output", "user"}) {
      maybe_field(b, f);
    }
  }

  void maybe_field(Json& b, const char* name) {
    if (p_.ConsumeIntegralInRange(0, 5) == 0) b[name] = pick_value(2);
  }

  // Mostly plausible values (small numbers, edge numbers, strings, lists of ids), any JSON at times.
  Json pick_value(int depth) {
    switch (p_.ConsumeIntegralInRange(0, 9)) {
      case 0: return p_.ConsumeIntegralInRange<int64_t>(-3, 30);
      case 1: return p_.ConsumeIntegral<int64_t>();
      case 2: return p_.ConsumeFloatingPoint<double>();
      case 3: return p_.ConsumeProbability<double>();
      case 4: return p_.ConsumeBool();
      case 5: return text();
      case 6: return token_ids();
      case 7: return nullptr;
      case 8: {
        Json o = Json::object();
        for (int i = p_.ConsumeIntegralInRange(0, 4); i > 0; --i) o[std::to_string(p_.ConsumeIntegralInRange(-2, 50000))] = pick_value(depth - 1);
        return o;
      }
      default: return value(depth);
    }
  }

  Json value(int depth) {
    const int kind = p_.ConsumeIntegralInRange(0, depth > 0 ? 7 : 5);
    switch (kind) {
      case 0: return nullptr;
      case 1: return p_.ConsumeBool();
      case 2: return p_.ConsumeIntegral<int64_t>();
      case 3: return p_.ConsumeFloatingPoint<double>();
      case 4:
      case 5: return text();
      case 6: {
        Json a = Json::array();
        for (int i = p_.ConsumeIntegralInRange(0, 4); i > 0; --i) a.push_back(value(depth - 1));
        return a;
      }
      default: {
        Json o = Json::object();
        for (int i = p_.ConsumeIntegralInRange(0, 4); i > 0; --i) o[text()] = value(depth - 1);
        return o;
      }
    }
  }

  Json token_ids() {
    Json a = Json::array();
    for (int i = p_.ConsumeIntegralInRange(0, 8); i > 0; --i) a.push_back(p_.ConsumeIntegralInRange<int64_t>(-2, 70000));
    return a;
  }

  std::string text() {
    static const char* kWords[] = {"user", "assistant", "system", "tool", "text", "function", "<|im_end|>",
                                   "{{", "}}", "{%", "\xc3\xa9", "\xe2\x98\x95", "\xff\xfe", "", " ", "\n"};
    if (p_.ConsumeBool()) return kWords[p_.ConsumeIntegralInRange<size_t>(0, std::size(kWords) - 1)];
    return p_.ConsumeRandomLengthString(64);
  }

  // JSON text for tool-call arguments: valid, broken, or nested past every limit.
  std::string arguments_text() {
    switch (p_.ConsumeIntegralInRange(0, 3)) {
      case 0: return value(4).dump(-1, ' ', false, Json::error_handler_t::replace);
      case 1: {
        const size_t depth = p_.ConsumeIntegralInRange<size_t>(0, 200000);
        const bool object = p_.ConsumeBool();
        std::string s;
        for (size_t i = 0; i < depth; ++i) s += object ? "{\"a\":" : "[";
        s += "1";
        if (p_.ConsumeBool()) {
          for (size_t i = 0; i < depth; ++i) s += object ? '}' : ']';
        }
        return s;
      }
      case 2: return "{\"x\": " + text() + "}";
      default: return p_.ConsumeRandomLengthString(256);
    }
  }

  Json message() {
    Json m = Json::object();
    static const char* kRoles[] = {"system", "user", "assistant", "tool", "developer", ""};
    if (p_.ConsumeIntegralInRange(0, 15) != 0) {
      m["role"] = p_.ConsumeIntegralInRange(0, 9) == 0 ? value(1) : Json(kRoles[p_.ConsumeIntegralInRange<size_t>(0, 5)]);
    }
    switch (p_.ConsumeIntegralInRange(0, 5)) {
      case 0: break;  // no content
      case 1: m["content"] = nullptr; break;
      case 2: {
        Json parts = Json::array();
        for (int i = p_.ConsumeIntegralInRange(0, 3); i > 0; --i) {
          parts.push_back(p_.ConsumeIntegralInRange(0, 5) == 0 ? value(2)
                                                                : Json{{"type", p_.ConsumeBool() ? "text" : text()},
                                                                       {"text", text()}});
        }
        m["content"] = std::move(parts);
        break;
      }
      case 3: m["content"] = value(2); break;
      default: m["content"] = text(); break;
    }
    if (p_.ConsumeIntegralInRange(0, 3) == 0) {
      Json calls = Json::array();
      for (int i = p_.ConsumeIntegralInRange(0, 3); i > 0; --i) {
        Json fn = {{"name", text()}};
        fn["arguments"] = p_.ConsumeIntegralInRange(0, 4) == 0 ? value(3) : Json(arguments_text());
        calls.push_back(Json{{"id", text()}, {"type", "function"}, {"function", p_.ConsumeIntegralInRange(0, 9) == 0 ? value(1) : fn}});
      }
      m["tool_calls"] = std::move(calls);
    }
    if (p_.ConsumeIntegralInRange(0, 5) == 0) m["reasoning_content"] = text();
    if (p_.ConsumeIntegralInRange(0, 7) == 0) m["tool_call_id"] = text();
    if (p_.ConsumeIntegralInRange(0, 9) == 0) m["name"] = value(1);
    return m;
  }

  std::string template_text() {
    static const char* kTemplates[] = {
        "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}",
        "{% for m in messages %}{{ m | tojson }}{% endfor %}{{ tools | tojson(indent=2) }}",
        "{% for i in range(1000000) %}x{% endfor %}",
        "{% set ns = namespace(s='') %}{% for i in range(100000) %}{% set ns.s = ns.s ~ 'xx' %}{% endfor %}{{ ns.s }}",
        "{{ messages[0].tool_calls[0].function.arguments | tojson }}",
        "{{ raise_exception('no') }}",
    };
    if (p_.ConsumeBool()) return kTemplates[p_.ConsumeIntegralInRange<size_t>(0, std::size(kTemplates) - 1)];
    return p_.ConsumeRandomLengthString(256);
  }

  FuzzedDataProvider& p_;
};

// Damages serialized bytes at times: truncation, a stray byte, invalid UTF-8.
std::string maybe_damage(std::string body, FuzzedDataProvider& p) {
  switch (p.ConsumeIntegralInRange(0, 7)) {
    case 0: body.resize(p.ConsumeIntegralInRange<size_t>(0, body.size())); break;
    case 1: body.insert(p.ConsumeIntegralInRange<size_t>(0, body.size()), 1, static_cast<char>(p.ConsumeIntegral<uint8_t>())); break;
    case 2:
      if (!body.empty()) body[p.ConsumeIntegralInRange<size_t>(0, body.size() - 1)] = static_cast<char>(p.ConsumeIntegral<uint8_t>());
      break;
    default: break;
  }
  return body;
}

void check_chat(const server::ChatRequest& r, FuzzedDataProvider& p) {
  // The parser's promises to the handlers.
  if (!r.messages.is_array() || r.messages.empty()) __builtin_trap();
  for (const Json& m : r.messages) {
    if (!m.is_object()) __builtin_trap();
    auto role = m.find("role");
    auto content = m.find("content");
    if (role == m.end() || !role->is_string() || content == m.end() || !content->is_string()) __builtin_trap();
  }
  if (r.params.n < 1 || r.params.n > 128 || r.top_logprobs < 0 || r.top_logprobs > 20) __builtin_trap();
  tessera::jinja::RenderLimits limits;
  limits.max_steps = 200'000;
  limits.max_output_bytes = 1 << 20;
  limits.max_string_bytes = 1 << 20;
  limits.max_list_items = 1 << 16;
  std::unique_ptr<ChatTemplate> own;
  const ChatTemplate* tmpl = templates()[p.ConsumeIntegralInRange<size_t>(0, templates().size() - 1)].get();
  if (r.chat_template) {
    auto t = ChatTemplate::from_string(*r.chat_template, "<s>", "</s>");
    if (!t.ok()) return;
    own = std::make_unique<ChatTemplate>(std::move(*t));
    tmpl = own.get();
  }
  auto text = server::render_chat_prompt(*tmpl, r.messages, r.tools, r.chat_template_kwargs, r.add_generation_prompt,
                                         r.continue_final_message, limits);
  if (text.ok() && text->size() > limits.max_output_bytes) __builtin_trap();
  if (!text.ok() && text.error().empty()) __builtin_trap();
}

void check_completion(const server::CompletionRequest& r) {
  if (r.prompts.empty() || r.prompts.size() > 1024) __builtin_trap();
  if (r.params.n < 1 || r.params.n > 128 || r.logprobs > 20 || r.prompt_logprobs > 20) __builtin_trap();
  if (!(r.params.top_p > 0.0f && r.params.top_p <= 1.0f)) __builtin_trap();
  for (const auto& prompt : r.prompts) {
    for (int32_t id : prompt.token_ids) {
      if (id < 0) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider p(data, size);
  RequestGenerator gen(p);
  const int mode = p.ConsumeIntegralInRange(0, 3);
  std::string body;
  if (mode == 3) {
    body = p.ConsumeRandomLengthString(4096);  // raw text straight into the parser
  } else {
    const Json j = mode == 0 ? gen.completion_body() : gen.chat_body();
    body = maybe_damage(j.dump(-1, ' ', false, Json::error_handler_t::replace), p);
  }
  try {
    const Json parsed = server::parse_json_body(body);
    if (mode == 0 || (mode == 3 && !parsed.contains("messages"))) {
      check_completion(server::parse_completion_request(parsed, {}));
    } else {
      check_chat(server::parse_chat_request(parsed, {}), p);
    }
  } catch (const server::ApiError& e) {
    if (e.status != boost::beast::http::status::bad_request || std::string(e.what()).empty()) __builtin_trap();
  }
  return 0;
}
