// GET /tokenizer_info (vLLM's, behind --enable-tokenizer-info-endpoint): the tokenizer's
// configuration as transformers holds it after loading: tokenizer_config.json's fields
// without file paths, added tokens as their text, the class AutoTokenizer would load (the
// fast variant of the configured one), and the chat template the server renders with.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tessera::server {

// config_path: a tokenizer_config.json, or "" (a GGUF's tokenizer: its special tokens only).
// tok and chat_template may be null.
nlohmann::ordered_json tokenizer_info(const std::string& config_path, const tokenizer::Tokenizer* tok,
                                      const ChatTemplate* chat_template);

}  // namespace tessera::server
