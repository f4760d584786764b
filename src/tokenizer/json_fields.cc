#include "tokenizer/json_fields.h"

#include "tokenizer/unicode.h"

namespace tessera::tokenizer::json_fields {
namespace {

Status type_error(const char* what, const char* key, const char* expected) {
  return Status::error(std::string(what) + ": field '" + key + "' must be " + expected);
}

const nlohmann::json* find(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

}  // namespace

Result<std::string> component_type(const nlohmann::json& j, const char* what) {
  if (!j.is_object()) return Status::error(std::string(what) + " must be a JSON object");
  auto it = j.find("type");
  if (it == j.end() || !it->is_string()) {
    return Status::error(std::string(what) + " has no string field 'type'");
  }
  return it->get<std::string>();
}

Result<bool> get_bool(const nlohmann::json& j, const char* key, bool fallback, const char* what) {
  const nlohmann::json* v = find(j, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) return type_error(what, key, "a boolean");
  return v->get<bool>();
}

Result<std::string> get_string(const nlohmann::json& j, const char* key,
                               const std::string& fallback, const char* what) {
  const nlohmann::json* v = find(j, key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) return type_error(what, key, "a string");
  return v->get<std::string>();
}

Result<int64_t> get_int(const nlohmann::json& j, const char* key, int64_t fallback,
                        const char* what) {
  const nlohmann::json* v = find(j, key);
  if (v == nullptr) return fallback;
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return type_error(what, key, "a smaller integer");
    }
    return static_cast<int64_t>(v->get<uint64_t>());
  }
  if (!v->is_number_integer()) return type_error(what, key, "an integer");
  return v->get<int64_t>();
}

Result<std::string> get_char(const nlohmann::json& j, const char* key,
                             const std::string& fallback, const char* what) {
  auto s = get_string(j, key, fallback, what);
  if (!s.ok()) return s;
  size_t pos = 0;
  if (s->empty()) return type_error(what, key, "a single character");
  unicode::decode_utf8(*s, &pos);
  if (pos != s->size()) return type_error(what, key, "a single character");
  return s;
}

Result<std::optional<std::string>> get_opt_string(const nlohmann::json& j, const char* key,
                                                  const char* what) {
  const nlohmann::json* v = find(j, key);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return type_error(what, key, "a string or null");
  return std::optional<std::string>(v->get<std::string>());
}

Result<Pattern> get_pattern(const nlohmann::json& j, const char* key, const char* what) {
  const nlohmann::json* v = find(j, key);
  if (v == nullptr || !v->is_object() || v->size() != 1) {
    return type_error(what, key, "an object {\"String\": ...} or {\"Regex\": ...}");
  }
  const auto it = v->begin();
  if (!it.value().is_string()) return type_error(what, key, "a pattern holding a string");
  const std::string text = it.value().get<std::string>();
  Result<Pattern> p = it.key() == "String"  ? Pattern::literal(text)
                      : it.key() == "Regex" ? Pattern::regex(text)
                                            : Result<Pattern>(Status::error("unknown pattern kind"));
  if (!p.ok()) return Status::error(std::string(what) + ": " + p.error());
  return p;
}

}  // namespace tessera::tokenizer::json_fields
