// Typed, non-throwing access to fields of tokenizer.json components. Each getter returns a
// clear error naming the component and the field when the type is wrong.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tokenizer/pcre_regex.h"

namespace tessera::tokenizer::json_fields {

// The "type" of a component object (an error when j is not an object with a string type).
Result<std::string> component_type(const nlohmann::json& j, const char* what);

// A missing or null field gives `fallback`; a field of the wrong type is an error.
Result<bool> get_bool(const nlohmann::json& j, const char* key, bool fallback, const char* what);
Result<std::string> get_string(const nlohmann::json& j, const char* key,
                               const std::string& fallback, const char* what);
Result<int64_t> get_int(const nlohmann::json& j, const char* key, int64_t fallback,
                        const char* what);
// A string holding exactly one Unicode code point (Rust `char` fields), as UTF-8.
Result<std::string> get_char(const nlohmann::json& j, const char* key,
                             const std::string& fallback, const char* what);
// An optional string: missing or null gives nullopt.
Result<std::optional<std::string>> get_opt_string(const nlohmann::json& j, const char* key,
                                                  const char* what);

// A token field of tokenizer_config.json (bos_token, an added_tokens_decoder entry): a string,
// or transformers' AddedToken object {"content": ...}; nullopt for anything else.
template <typename Json>
std::optional<std::string> added_token_text(const Json& v) {
  if (v.is_string()) return v.template get<std::string>();
  if (v.is_object()) {
    auto c = v.find("content");
    if (c != v.end() && c->is_string()) return c->template get<std::string>();
  }
  return std::nullopt;
}

// config[key] read by added_token_text; nullopt when absent.
template <typename Json>
std::optional<std::string> config_token(const Json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  return added_token_text(*it);
}

// HF's pattern object: {"String": "..."} or {"Regex": "..."}.
Result<Pattern> get_pattern(const nlohmann::json& j, const char* key, const char* what);

}  // namespace tessera::tokenizer::json_fields
