#include "chat/chat_template.h"

#include "tokenizer/json_fields.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "loader/gguf.h"

namespace tessera {
namespace {

// Message fields a reasoning trace may arrive under; the first is what templates read.
constexpr const char* kReasoningFields[] = {"reasoning_content", "thinking", "reasoning"};

// transformers' _normalize_chat_messages + _alias_reasoning_fields on one message.
nlohmann::ordered_json normalize_message(const nlohmann::ordered_json& m) {
  if (!m.is_object()) return m;
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  const nlohmann::ordered_json* reasoning = nullptr;
  for (const char* f : kReasoningFields) {
    auto it = m.find(f);
    if (it != m.end() && !it->is_null()) {
      reasoning = &*it;
      break;
    }
  }
  // {"thinking": r, **message, "reasoning_content": r}: key order matters to templates
  // that iterate over a message.
  if (reasoning != nullptr) out["thinking"] = *reasoning;
  for (const auto& [k, v] : m.items()) {
    if (!v.is_null()) out[k] = v;
  }
  if (reasoning != nullptr) out["reasoning_content"] = *reasoning;
  return out;
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<ChatTemplate> ChatTemplate::from_string(const std::string& source, std::optional<std::string> bos_token,
                                               std::optional<std::string> eos_token) {
  auto t = jinja::Template::parse(source);
  if (!t.ok()) return t.status();
  ChatTemplate ct(std::move(*t), source);
  ct.bos_token_ = std::move(bos_token);
  ct.eos_token_ = std::move(eos_token);
  return ct;
}

Result<ChatTemplate> ChatTemplate::from_tokenizer_config(const nlohmann::json& config) {
  if (!config.is_object()) return Status::error("tokenizer config is not a JSON object");
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return Status::error("tokenizer config has no chat_template");
  std::string source;
  if (it->is_string()) {
    source = it->get<std::string>();
  } else if (it->is_array()) {
    bool found = false;
    for (const auto& entry : *it) {
      if (entry.is_object() && entry.value("name", nlohmann::json()) == "default") {
        auto tmpl = entry.find("template");
        if (tmpl == entry.end() || !tmpl->is_string()) return Status::error("chat_template 'default' has no template string");
        source = tmpl->get<std::string>();
        found = true;
        break;
      }
    }
    if (!found) return Status::error("chat_template list has no template named 'default'");
  } else {
    return Status::error("chat_template must be a string or a list of {name, template}");
  }
  return from_string(source, tokenizer::json_fields::config_token(config, "bos_token"),
                     tokenizer::json_fields::config_token(config, "eos_token"));
}

Result<ChatTemplate> ChatTemplate::from_gguf(const GgufFile& gguf) {
  auto source = gguf.get_string("tokenizer.chat_template");
  if (!source) return Status::error(gguf.source() + ": no tokenizer.chat_template in the GGUF metadata");
  auto token_text = [&](const char* id_key) -> std::optional<std::string> {
    auto id = gguf.get_int(id_key);
    const GgufValue* tokens = gguf.get("tokenizer.ggml.tokens");
    if (!id || tokens == nullptr || !tokens->is_array() || *id < 0 || static_cast<uint64_t>(*id) >= tokens->size()) {
      return std::nullopt;
    }
    auto s = tokens->at(static_cast<size_t>(*id)).to_string();
    if (!s) return std::nullopt;
    return std::string(*s);
  };
  return from_string(std::string(*source), token_text("tokenizer.ggml.bos_token_id"),
                     token_text("tokenizer.ggml.eos_token_id"));
}

Result<ChatTemplate> ChatTemplate::from_file(const std::string& path) {
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::error(path + ": cannot open file");
    char magic[4] = {};
    in.read(magic, 4);
    if (in.gcount() == 4 && std::string_view(magic, 4) == "GGUF") {
      auto gguf = GgufFile::open(path);
      if (!gguf.ok()) return gguf.status();
      return from_gguf(**gguf);
    }
  }
  auto text = read_file(path);
  if (!text.ok()) return text.status();
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) {
    auto config = nlohmann::json::parse(*text, nullptr, false);
    if (config.is_discarded()) return Status::error(path + ": not valid JSON");
    auto ct = from_tokenizer_config(config);
    if (!ct.ok()) return Status::error(path + ": " + ct.error());
    return ct;
  }
  auto ct = from_string(*text);
  if (!ct.ok()) return Status::error(path + ": " + ct.error());
  return ct;
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& context,
                                         const jinja::RenderOptions& options) const {
  if (!context.is_object()) return Status::error("chat template context must be a JSON object");
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();
  if (bos_token_) vars["bos_token"] = *bos_token_;
  if (eos_token_) vars["eos_token"] = *eos_token_;
  vars["tools"] = nullptr;
  vars["documents"] = nullptr;
  vars["add_generation_prompt"] = false;
  for (const auto& [k, v] : context.items()) {
    if (k == "messages" && v.is_array()) {
      nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
      for (const auto& m : v) msgs.push_back(normalize_message(m));
      vars[k] = std::move(msgs);
    } else {
      vars[k] = v;
    }
  }
  auto value = jinja::value_from_json(vars);
  if (!value.ok()) return Status::error("chat template context: " + value.error());
  return template_.render(*value, options);
}

Result<std::time_t> parse_iso8601_utc(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  int consumed = 0;
  std::tm tm{};
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &consumed) == 6) {
    std::string_view rest = std::string_view(text).substr(static_cast<size_t>(consumed));
    if (!rest.empty() && rest[0] == '.') {
      size_t k = 1;
      while (k < rest.size() && rest[k] >= '0' && rest[k] <= '9') ++k;
      rest.remove_prefix(k);
    }
    if (rest != "" && rest != "Z" && rest != "+00:00") return Status::error("bad time '" + text + "': expected UTC (Z)");
  } else if (std::sscanf(text.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &consumed) == 3 &&
             static_cast<size_t>(consumed) == text.size()) {
  } else {
    return Status::error("bad time '" + text + "': expected YYYY-MM-DDTHH:MM:SSZ");
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) {
    return Status::error("bad time '" + text + "'");
  }
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return timegm(&tm);
}

}  // namespace tessera
