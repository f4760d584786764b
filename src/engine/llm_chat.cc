// LLM::chat: conversations rendered by the model's chat template (or one given), tokenized
// without adding special tokens (the template writes BOS itself, as vLLM does), generated.
#include "chat/chat_template.h"
#include "engine/engine_setup.h"
#include "engine/llm_impl.h"

namespace tessera {

Result<std::string> LLM::apply_chat_template(const nlohmann::ordered_json& messages, const ChatOptions& options) {
  Impl& m = *impl_;
  const std::string source = options.chat_template.empty() ? default_chat_template_source(m.args) : options.chat_template;
  if (source.empty()) return Status::error("the model has no chat template; pass one (a .jinja file)");
  auto& cached = m.chat_templates[source];
  if (!cached) {
    auto t = ChatTemplate::from_file(source);
    if (!t.ok()) return t.status();
    cached = std::make_unique<ChatTemplate>(std::move(*t));
  }
  if (!messages.is_array()) return Status::error("messages must be a list");
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  if (options.chat_template_kwargs.is_object()) {
    for (const auto& [k, v] : options.chat_template_kwargs.items()) context[k] = v;
  }
  context["messages"] = messages;
  context["add_generation_prompt"] = options.add_generation_prompt;
  if (!options.tools.is_null()) context["tools"] = options.tools;
  return cached->render(context);
}

std::vector<RequestOutput> LLM::chat(const std::vector<nlohmann::ordered_json>& conversations,
                                     const SamplingParams& params, const ChatOptions& options) {
  Impl& m = *impl_;
  std::vector<RequestOutput> results(conversations.size());
  std::vector<PromptInput> prompts;
  std::vector<size_t> slot;
  for (size_t i = 0; i < conversations.size(); ++i) {
    auto text = apply_chat_template(conversations[i], options);
    if (!text.ok()) {
      results[i].error = text.error();
      continue;
    }
    if (!m.tokenizer) {
      results[i].error = "chat needs a tokenizer: " + m.tokenizer_error;
      continue;
    }
    auto ids = m.tokenizer->encode(*text, /*add_special_tokens=*/false);
    if (!ids.ok()) {
      results[i].error = ids.error();
      continue;
    }
    prompts.emplace_back(std::move(*ids));
    slot.push_back(i);
    results[i].prompt = std::move(*text);
  }
  auto outs = generate(prompts, params);
  for (size_t k = 0; k < outs.size(); ++k) {
    std::optional<std::string> prompt = std::move(results[slot[k]].prompt);
    results[slot[k]] = std::move(outs[k]);
    results[slot[k]].prompt = std::move(prompt);
  }
  return results;
}

}  // namespace tessera
