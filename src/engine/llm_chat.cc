// LLM::chat: conversations read as vLLM's LLM.chat reads them, rendered by the model's chat
// template (or one given), tokenized without adding special tokens (the template writes BOS
// itself, as vLLM does), generated.
#include <string_view>

#include "chat/chat_template.h"
#include "engine/engine_setup.h"
#include "engine/llm_impl.h"

namespace tessera {

namespace {

using Json = nlohmann::ordered_json;

// vLLM's load_chat_template rule: text with Jinja's characters is a template, else a path.
bool is_template_text(std::string_view source) { return source.find_first_of("{}\n") != std::string_view::npos; }

// A message's content as the template sees it: text, text parts joined by newlines, "" for null.
Result<std::string> content_text(const Json& content) {
  if (content.is_null()) return std::string();
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return Status::error("a message's content must be a string or a list of content parts");
  std::string text;
  for (const Json& part : content) {
    const auto type = part.is_object() ? part.find("type") : part.end();
    if (type == part.end() || !type->is_string()) return Status::error("content parts need a string \"type\"");
    if (*type != "text" && *type != "input_text") {
      return Status::error("content parts of type \"" + type->get<std::string>() +
                           "\" are not supported by this model");
    }
    const auto t = part.find("text");
    if (t == part.end() || !t->is_string()) return Status::error("text parts need a string \"text\"");
    if (!text.empty()) text += '\n';
    text += t->get<std::string>();
  }
  return text;
}

// Tool calls' arguments sent as JSON text become objects: templates iterate over them.
void parse_tool_call_arguments(Json* message) {
  auto calls = message->find("tool_calls");
  if (calls == message->end() || !calls->is_array()) return;
  for (Json& call : *calls) {
    auto fn = call.is_object() ? call.find("function") : call.end();
    if (fn == call.end() || !fn->is_object()) continue;
    auto args = fn->find("arguments");
    if (args == fn->end() || !args->is_string()) continue;
    Json parsed = Json::parse(args->get_ref<const std::string&>(), nullptr, false);
    if (parsed.is_object()) *args = std::move(parsed);
  }
}

// One conversation as vLLM's parse_chat_messages leaves it for the template.
Result<Json> chat_messages(const Json& conversation) {
  if (!conversation.is_array()) return Status::error("messages must be a list");
  if (conversation.empty()) return Status::error("messages must not be empty");
  Json out = Json::array();
  for (const Json& m : conversation) {
    if (!m.is_object()) return Status::error("every message must be an object");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) return Status::error("every message needs a string \"role\"");
    Json msg = m;
    auto text = content_text(m.value("content", Json()));
    if (!text.ok()) return text.status();
    msg["content"] = std::move(*text);
    parse_tool_call_arguments(&msg);
    out.push_back(std::move(msg));
  }
  return out;
}

// transformers' continue_final_message: the rendering ends right after the final message's
// content (stripped of surrounding whitespace, which templates often trim).
Status cut_after_final_message(const Json& messages, std::string* text) {
  const Json& last = messages.back();
  const auto content = last.is_object() ? last.find("content") : last.end();
  if (content == last.end() || !content->is_string()) {
    return Status::error("continue_final_message is set but the final message has no text to continue");
  }
  const std::string& c = content->get_ref<const std::string&>();
  constexpr const char* kSpace = " \t\n\r\f\v";
  const size_t begin = c.find_first_not_of(kSpace);
  const std::string stripped =
      begin == std::string::npos ? "" : c.substr(begin, c.find_last_not_of(kSpace) - begin + 1);
  const size_t at = text->rfind(stripped);
  if (at == std::string::npos) {
    return Status::error("continue_final_message is set but the final message does not appear in the chat after "
                         "applying the chat template");
  }
  // The message's trailing whitespace stays when the template kept the message whole.
  const size_t lstripped = begin == std::string::npos ? 0 : c.size() - begin;
  const bool whole = text->compare(at, lstripped, c) == 0;
  text->resize(at + (whole ? lstripped : stripped.size()));
  return Status();
}

}  // namespace

Result<std::string> LLM::apply_chat_template(const nlohmann::ordered_json& messages, const ChatOptions& options) {
  Impl& m = *impl_;
  if (options.continue_final_message && options.add_generation_prompt) {
    return Status::error("continue_final_message and add_generation_prompt are not compatible: use "
                         "continue_final_message to continue the final message, add_generation_prompt to start a new "
                         "assistant message");
  }
  const std::string source =
      options.chat_template.empty() ? default_chat_template_source(m.args) : options.chat_template;
  if (source.empty()) return Status::error("the model has no chat template; pass one (a .jinja file)");
  const tokenizer::SpecialTokens* special = m.tokenizer ? &m.tokenizer->special_tokens() : nullptr;
  auto& cached = m.chat_templates[source];
  if (!cached) {
    auto t = !is_template_text(source) ? ChatTemplate::from_file(source)
             : special != nullptr      ? ChatTemplate::from_string(source, special->bos_token, special->eos_token)
                                       : ChatTemplate::from_string(source);
    if (!t.ok()) return t.status();
    cached = std::make_unique<ChatTemplate>(std::move(*t));
  }
  if (!messages.is_array()) return Status::error("messages must be a list");
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  // transformers passes the tokenizer's special tokens to every template; a .jinja file has none.
  if (special != nullptr && !cached->bos_token()) context["bos_token"] = special->bos_token;
  if (special != nullptr && !cached->eos_token()) context["eos_token"] = special->eos_token;
  if (options.chat_template_kwargs.is_object()) {
    for (const auto& [k, v] : options.chat_template_kwargs.items()) context[k] = v;
  }
  context["messages"] = messages;
  context["add_generation_prompt"] = options.add_generation_prompt;
  if (!options.tools.is_null()) context["tools"] = options.tools;
  auto text = cached->render(context);
  if (text.ok() && options.continue_final_message && !messages.empty()) {
    if (Status st = cut_after_final_message(messages, &*text); !st.ok()) return st;
  }
  return text;
}

std::vector<RequestOutput> LLM::chat(const std::vector<nlohmann::ordered_json>& conversations,
                                     const SamplingParams& params, const ChatOptions& options) {
  return chat(conversations, std::vector<SamplingParams>(conversations.size(), params), options);
}

std::vector<RequestOutput> LLM::chat(const std::vector<nlohmann::ordered_json>& conversations,
                                     const std::vector<SamplingParams>& params, const ChatOptions& options,
                                     const ProgressCallback& on_step) {
  std::vector<RequestOutput> results(conversations.size());
  if (params.size() != conversations.size()) {
    for (auto& r : results) r.error = "chat: one SamplingParams per conversation expected";
    return results;
  }
  std::vector<PromptInput> prompts;
  std::vector<SamplingParams> prompt_params;
  std::vector<size_t> slot;
  for (size_t i = 0; i < conversations.size(); ++i) {
    auto messages = chat_messages(conversations[i]);
    auto text = messages.ok() ? apply_chat_template(*messages, options) : Result<std::string>(messages.status());
    auto ids = text.ok() ? encode(*text, /*add_special_tokens=*/false) : Result<std::vector<int32_t>>(text.status());
    if (!ids.ok()) {
      results[i].error = ids.error();
      continue;
    }
    prompts.emplace_back(std::move(*ids));
    prompt_params.push_back(params[i]);
    slot.push_back(i);
    results[i].prompt = std::move(*text);
  }
  auto outs = generate(prompts, prompt_params, on_step);
  for (size_t k = 0; k < outs.size(); ++k) {
    std::optional<std::string> prompt = std::move(results[slot[k]].prompt);
    results[slot[k]] = std::move(outs[k]);
    results[slot[k]].prompt = std::move(prompt);
  }
  return results;
}

}  // namespace tessera
