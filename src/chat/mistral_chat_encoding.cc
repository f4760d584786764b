#include "chat/mistral_chat_encoding.h"

#include <optional>
#include <string>

#include "chat/python_json.h"

namespace tessera::chat {

namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kJoin = "\n\n";  // mistral-common joins aggregated texts with this

struct ToolCall {
  std::string id;  // "null" when absent, as mistral-common's default
  std::string name;
  std::string arguments;  // normalized JSON text
};

// A message after mistral-common's normalization: runs of same-role messages aggregated,
// system messages lifted into one system prompt.
struct Message {
  std::string role;
  std::string content;
  std::vector<ToolCall> tool_calls;  // assistant
  bool prefix = false;               // assistant: no EOS (the model continues it)
  // tool: one entry per result, (name, tool_call_id, normalized content)
  struct Result {
    std::string name, call_id, content;
  };
  std::vector<Result> results;
};

Status message_error(size_t idx, const std::string& what) {
  return Status::error("mistral chat: messages[" + std::to_string(idx) + "]: " + what);
}

// Message content: a string, null, or a list of {"type": "text", "text": ...} chunks
// (joined with "\n\n", empty chunks skipped).
Result<std::string> content_text(const Json& m, size_t idx) {
  auto it = m.find("content");
  if (it == m.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) return message_error(idx, "content must be a string or a list of text chunks");
  std::string out;
  for (const Json& chunk : *it) {
    if (!chunk.is_object() || chunk.value("type", "") != "text" || !chunk.contains("text") ||
        !chunk["text"].is_string()) {
      return message_error(idx, "only text content chunks are supported");
    }
    const std::string t = chunk["text"].get<std::string>();
    if (t.empty()) continue;
    if (!out.empty()) out += kJoin;
    out += t;
  }
  return out;
}

// json.loads then json.dumps; text that is not JSON stays as it is, empty becomes "{}".
std::string normalize_json_text(const std::string& s) {
  if (s.empty()) return "{}";
  auto v = python_json_loads(s);
  return v ? python_json_dumps(*v) : s;
}

// The parsed JSON value of normalized text, or the text itself as a JSON string.
Json parse_or_string(const std::string& s) {
  auto v = python_json_loads(s);
  return v ? *v : Json(s);
}

std::string string_field(const Json& m, const char* key, const std::string& fallback) {
  auto it = m.find(key);
  return it != m.end() && it->is_string() ? it->get<std::string>() : fallback;
}

Result<std::vector<Message>> normalize(const Json& messages, std::optional<std::string>& system_prompt) {
  std::vector<Message> out;
  std::vector<std::string> system_parts;
  std::string run_role;
  std::vector<size_t> run;  // indices of the current same-role run

  auto flush = [&]() -> Status {
    if (run.empty()) return Status();
    if (run_role == "user" || run_role == "assistant") {
      Message msg;
      msg.role = run_role;
      for (size_t idx : run) {
        const Json& m = messages[idx];
        auto text = content_text(m, idx);
        TESSERA_RETURN_IF_ERROR(text);
        if (!text->empty()) msg.content += (msg.content.empty() ? "" : kJoin) + *text;
        if (run_role != "assistant") continue;
        if (m.value("prefix", false)) msg.prefix = true;
        auto calls = m.find("tool_calls");
        if (calls == m.end() || calls->is_null()) continue;
        if (!calls->is_array()) return message_error(idx, "tool_calls must be a list");
        if (!text->empty() && !calls->empty()) {
          return message_error(idx, "an assistant message cannot have both content and tool calls");
        }
        for (const Json& c : *calls) {
          if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) {
            return message_error(idx, "a tool call needs a \"function\" object");
          }
          const Json& f = c["function"];
          ToolCall tc;
          tc.id = string_field(c, "id", "null");
          tc.name = string_field(f, "name", "");
          auto args = f.find("arguments");
          std::string args_text;
          if (args != f.end() && args->is_string()) {
            args_text = args->get<std::string>();
          } else if (args != f.end() && !args->is_null()) {
            args_text = python_json_dumps(*args);
          }
          tc.arguments = normalize_json_text(args_text);
          msg.tool_calls.push_back(std::move(tc));
        }
      }
      out.push_back(std::move(msg));
    } else if (run_role == "tool") {
      // Kept one message per result; the v2 encoder groups them.
      for (size_t idx : run) {
        auto text = content_text(messages[idx], idx);
        TESSERA_RETURN_IF_ERROR(text);
        Message msg;
        msg.role = "tool";
        msg.results.push_back({string_field(messages[idx], "name", ""),
                               string_field(messages[idx], "tool_call_id", ""), normalize_json_text(*text)});
        out.push_back(std::move(msg));
      }
    }
    run.clear();
    return Status();
  };

  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return message_error(i, "expected an object with a string \"role\"");
    }
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      return message_error(i, "unknown role '" + role + "'");
    }
    if (role == "system") {
      auto text = content_text(m, i);
      TESSERA_RETURN_IF_ERROR(text);
      if (!text->empty()) system_parts.push_back(*text);
    }
    if (role != run_role) {
      TESSERA_RETURN_IF_ERROR(flush());
      run_role = role;
    }
    run.push_back(i);
  }
  TESSERA_RETURN_IF_ERROR(flush());
  if (out.empty() || out.front().role != "user") out.insert(out.begin(), Message{"user", "", {}, false, {}});
  if (!system_parts.empty()) {
    std::string sp;
    for (const auto& p : system_parts) sp += (sp.empty() ? "" : kJoin) + p;
    system_prompt = sp;
  }
  return out;
}

class Encoder {
 public:
  explicit Encoder(const tokenizer::SentencePieceTokenizer& tok) : tok_(tok) {}

  Status control(const char* piece) {
    auto id = tok_.token_to_id(piece);
    if (!id) return Status::error(std::string("mistral chat: the tokenizer has no ") + piece + " piece");
    ids_.push_back(*id);
    return Status();
  }
  Status text(const std::string& s) {
    auto ids = tok_.encode_ordinary(s);
    TESSERA_RETURN_IF_ERROR(ids);
    ids_.insert(ids_.end(), ids->begin(), ids->end());
    return Status();
  }
  Status eos() {
    if (!tok_.special_tokens().eos_id) return Status::error("mistral chat: the tokenizer has no EOS");
    ids_.push_back(*tok_.special_tokens().eos_id);
    return Status();
  }
  std::vector<tokenizer::TokenId>& ids() { return ids_; }

 private:
  const tokenizer::SentencePieceTokenizer& tok_;
  std::vector<tokenizer::TokenId> ids_;
};

}  // namespace

Result<std::vector<tokenizer::TokenId>> mistral_encode_chat(const tokenizer::SentencePieceTokenizer& tok,
                                                            MistralInstructVersion version,
                                                            const nlohmann::ordered_json& request) {
  if (!request.is_object() || !request.contains("messages") || !request["messages"].is_array()) {
    return Status::error("mistral chat: request needs a \"messages\" list");
  }
  std::optional<std::string> system_prompt;
  auto msgs = normalize(request["messages"], system_prompt);
  TESSERA_RETURN_IF_ERROR(msgs);
  Json tools = request.contains("tools") && request["tools"].is_array() ? request["tools"] : Json::array();
  const bool v1 = version == MistralInstructVersion::kV1;
  const bool v2 = version == MistralInstructVersion::kV2;
  if (v1 && !tools.empty()) return Status::error("mistral chat: v1 tokenizers have no tools");

  size_t first_user = msgs->size(), last_user = 0;
  for (size_t i = 0; i < msgs->size(); ++i) {
    if ((*msgs)[i].role != "user") continue;
    first_user = std::min(first_user, i);
    last_user = i;
  }

  Encoder enc(tok);
  if (!tok.special_tokens().bos_id) return Status::error("mistral chat: the tokenizer has no BOS");
  enc.ids().push_back(*tok.special_tokens().bos_id);
  for (size_t i = 0; i < msgs->size(); ++i) {
    const Message& m = (*msgs)[i];
    const bool before_last_user = i < last_user;
    if (m.role == "user") {
      std::string content = m.content;
      if (v1) {
        if (i == first_user && system_prompt) content = *system_prompt + kJoin + content;
        TESSERA_RETURN_IF_ERROR(enc.text("[INST] " + content + " [/INST]"));
        continue;
      }
      if (i == last_user && !tools.empty()) {
        TESSERA_RETURN_IF_ERROR(enc.control("[AVAILABLE_TOOLS]"));
        TESSERA_RETURN_IF_ERROR(enc.text(python_json_dumps(tools)));
        TESSERA_RETURN_IF_ERROR(enc.control("[/AVAILABLE_TOOLS]"));
      }
      if (i == last_user && system_prompt) content = *system_prompt + kJoin + content;
      TESSERA_RETURN_IF_ERROR(enc.control("[INST]"));
      TESSERA_RETURN_IF_ERROR(enc.text(content));
      TESSERA_RETURN_IF_ERROR(enc.control("[/INST]"));
    } else if (m.role == "assistant") {
      if (!m.tool_calls.empty()) {
        if (v1) return Status::error("mistral chat: v1 tokenizers have no tool calls");
        if (v2 && before_last_user) continue;
        Json calls = Json::array();
        for (const ToolCall& c : m.tool_calls) {
          Json call = Json::object();
          call["name"] = c.name;
          call["arguments"] = parse_or_string(c.arguments);
          if (!v2 && !c.id.empty() && c.id != "null") call["id"] = c.id;
          calls.push_back(std::move(call));
        }
        TESSERA_RETURN_IF_ERROR(enc.control("[TOOL_CALLS]"));
        TESSERA_RETURN_IF_ERROR(enc.text(python_json_dumps(calls)));
      } else if (!m.content.empty()) {
        std::string content = m.content;
        if (!v1) content.erase(content.find_last_not_of(' ') + 1);  // rstrip(" ")
        TESSERA_RETURN_IF_ERROR(enc.text(content));
      } else {
        return Status::error("mistral chat: an assistant message has neither content nor tool calls");
      }
      if (!m.prefix) TESSERA_RETURN_IF_ERROR(enc.eos());
    } else if (m.role == "tool") {
      if (v1) return Status::error("mistral chat: v1 tokenizers have no tool messages");
      if (v2) {
        if (before_last_user) continue;
        // Consecutive results go into one list.
        Json results = Json::array();
        size_t j = i;
        for (; j < msgs->size() && (*msgs)[j].role == "tool"; ++j) {
          for (const auto& r : (*msgs)[j].results) {
            Json o = Json::object();
            o["name"] = r.name;
            o["content"] = parse_or_string(r.content);
            results.push_back(std::move(o));
          }
        }
        i = j - 1;
        TESSERA_RETURN_IF_ERROR(enc.control("[TOOL_RESULTS]"));
        TESSERA_RETURN_IF_ERROR(enc.text(python_json_dumps(results)));
        TESSERA_RETURN_IF_ERROR(enc.control("[/TOOL_RESULTS]"));
      } else {
        const auto& r = m.results.front();
        Json o = Json::object();
        o["content"] = parse_or_string(r.content);
        o["call_id"] = r.call_id;
        TESSERA_RETURN_IF_ERROR(enc.control("[TOOL_RESULTS]"));
        TESSERA_RETURN_IF_ERROR(enc.text(python_json_dumps(o)));
        TESSERA_RETURN_IF_ERROR(enc.control("[/TOOL_RESULTS]"));
      }
    }
  }
  return std::move(enc.ids());
}

}  // namespace tessera::chat
