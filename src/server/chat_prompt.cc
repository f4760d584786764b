#include "server/chat_prompt.h"

namespace tessera::server {

Result<std::string> render_chat_prompt(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                                       const nlohmann::ordered_json& tools, const nlohmann::ordered_json& kwargs,
                                       bool add_generation_prompt, bool continue_final_message,
                                       const jinja::RenderLimits& limits) {
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  for (const auto& [k, v] : kwargs.items()) context[k] = v;
  context["messages"] = messages;
  context["add_generation_prompt"] = add_generation_prompt;
  if (!tools.is_null()) context["tools"] = tools;
  jinja::RenderOptions options;
  options.limits = limits;
  auto text = tmpl.render(context, options);
  if (!text.ok()) return text;
  if (continue_final_message && messages.is_array() && !messages.empty()) {
    // As transformers: end the prompt right after the final message's content.
    const auto& last = messages.back();
    auto content = last.find("content");
    if (content != last.end() && content->is_string()) {
      const std::string& c = content->get_ref<const std::string&>();
      const size_t at = text->rfind(c);
      if (!c.empty() && at != std::string::npos) text->resize(at + c.size());
    }
  }
  return text;
}

}  // namespace tessera::server
