// Hugging Face chat templates: load one from a .jinja file, a tokenizer_config.json or a
// GGUF file, and render a conversation the way transformers' apply_chat_template does
// (jinja2 ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, HF's tojson,
// raise_exception and strftime_now).
#pragma once

#include <ctime>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/jinja/template.h"
#include "common/status.h"

namespace tessera {

class GgufFile;

class ChatTemplate {
 public:
  // From template text; bos/eos are the defaults for bos_token/eos_token.
  static Result<ChatTemplate> from_string(const std::string& source,
                                          std::optional<std::string> bos_token = std::nullopt,
                                          std::optional<std::string> eos_token = std::nullopt);
  // tokenizer_config.json contents: `chat_template` is a string or a list of
  // {name, template} (the one named "default" is used); bos_token/eos_token are strings or
  // {"content": ...} objects.
  static Result<ChatTemplate> from_tokenizer_config(const nlohmann::json& config);
  // GGUF metadata: tokenizer.chat_template, with bos/eos from the GGUF vocabulary.
  static Result<ChatTemplate> from_gguf(const GgufFile& gguf);
  // A path to a .gguf (recognised by its magic), a .json tokenizer config, or template text.
  static Result<ChatTemplate> from_file(const std::string& path);

  // Renders with HF's variables. `context` is a JSON object: messages, tools, documents,
  // add_generation_prompt, bos_token, eos_token and any extra keys (enable_thinking, ...).
  // As in transformers: tools and documents default to None, add_generation_prompt to
  // false, bos_token/eos_token to the file's; message keys whose value is null are dropped
  // and a message's reasoning (reasoning_content, thinking or reasoning) is also offered
  // under reasoning_content and thinking.
  Result<std::string> render(const nlohmann::ordered_json& context,
                             const jinja::RenderOptions& options = {}) const;

  const std::string& source() const { return source_; }
  const std::optional<std::string>& bos_token() const { return bos_token_; }
  const std::optional<std::string>& eos_token() const { return eos_token_; }

 private:
  ChatTemplate(jinja::Template t, std::string source) : template_(std::move(t)), source_(std::move(source)) {}

  jinja::Template template_;
  std::string source_;
  std::optional<std::string> bos_token_;
  std::optional<std::string> eos_token_;
};

// Parses "2025-07-10T12:00:00Z" (also without the Z, with fractional seconds, or a bare
// date) as UTC.
Result<std::time_t> parse_iso8601_utc(const std::string& text);

}  // namespace tessera
