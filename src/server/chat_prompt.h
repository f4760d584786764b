// The prompt text of a chat request: its messages, tools and template kwargs through a chat
// template under explicit limits, as transformers' apply_chat_template does
// (continue_final_message included). Kept apart from the HTTP routes so the fuzzer drives
// the same code the server runs.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "common/status.h"

namespace tessera::server {

Result<std::string> render_chat_prompt(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                                       const nlohmann::ordered_json& tools, const nlohmann::ordered_json& kwargs,
                                       bool add_generation_prompt, bool continue_final_message,
                                       const jinja::RenderLimits& limits);

}  // namespace tessera::server
