#include "server/chat_tools.h"

#include "chat/python_json.h"
#include "server/tool_parsers/tool_parser_util.h"

namespace tessera::server {
namespace {

using Json = nlohmann::ordered_json;

bool has_tools(const ChatRequest& req) { return req.tools.is_array() && !req.tools.empty(); }

// Each tool is {"type": "function", "function": {"name": ..., "parameters": {...}}}.
void check_tools(const Json& tools) {
  if (!tools.is_array()) return;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const Json& t = tools[i];
    if (!t.is_object()) bad_request(at + " must be an object", "tools");
    if (const auto type = t.find("type"); type != t.end() && *type != "function") {
      bad_request(at + ".type must be \"function\"", "tools");
    }
    const auto f = t.find("function");
    if (f == t.end() || !f->is_object()) bad_request(at + ".function is required (an object)", "tools");
    const auto name = f->find("name");
    if (name == f->end() || !name->is_string()) bad_request(at + ".function.name is required (a string)", "tools");
    if (const auto p = f->find("parameters"); p != f->end() && !p->is_object() && !p->is_null()) {
      bad_request(at + ".function.parameters must be an object (a JSON Schema)", "tools");
    }
  }
}

// A function's parameters schema ({"type": "object", "properties": {}} when it has none),
// its $defs moved to *defs: nested under the calls' schema, "#/$defs/..." must still resolve.
Json parameters_schema(const Json& function, Json* defs) {
  const auto p = function.find("parameters");
  if (p == function.end() || !p->is_object() || p->empty()) return Json{{"type", "object"}, {"properties", Json::object()}};
  Json schema = *p;
  if (const auto d = schema.find("$defs"); d != schema.end() && d->is_object()) {
    for (const auto& [name, def] : d->items()) {
      if (defs->contains(name) && (*defs)[name] != def) {
        bad_request("tools define $defs/" + name + " twice, differently", "tools");
      }
      (*defs)[name] = def;
    }
    schema.erase("$defs");
  }
  return schema;
}

const Json* find_function(const Json& tools, const std::string& name) {
  for (const Json& t : tools) {
    if (t.is_object() && t.contains("function") && t["function"].value("name", std::string()) == name) {
      return &t["function"];
    }
  }
  return nullptr;
}

// tool_choice "required": a list of at least one {"name", "parameters"} of the tools (at most
// one when parallel_tool_calls is false), vLLM's schema for it.
Json required_calls_schema(const ChatRequest& req) {
  Json defs = Json::object();
  Json any = Json::array();
  for (const Json& t : req.tools) {
    const Json& f = t["function"];
    any.push_back(Json{{"properties",
                        Json{{"name", Json{{"type", "string"}, {"enum", Json::array({f["name"]})}}},
                             {"parameters", parameters_schema(f, &defs)}}},
                       {"required", Json::array({"name", "parameters"})}});
  }
  Json schema = {{"type", "array"}, {"minItems", 1}, {"items", Json{{"type", "object"}, {"anyOf", std::move(any)}}}};
  if (!req.parallel_tool_calls) schema["maxItems"] = 1;
  if (!defs.empty()) schema["$defs"] = std::move(defs);
  return schema;
}

Json named_call_schema(const Json& function) {
  Json defs = Json::object();
  Json schema = parameters_schema(function, &defs);
  if (!defs.empty()) schema["$defs"] = std::move(defs);
  return schema;
}

Json call_json(const std::string& id, const std::string& name, const std::string& arguments) {
  return Json{{"id", id}, {"type", "function"}, {"function", Json{{"name", name}, {"arguments", arguments}}}};
}

// One element of a "required" reply's list as a call: its parameters as Python's json.dumps
// writes them (vLLM's form); nullopt when it is not {"name": ..., ...}.
std::optional<Json> required_call(const Json& element) {
  if (!element.is_object() || !element.contains("name") || !element["name"].is_string()) return std::nullopt;
  const auto params = element.find("parameters");
  return call_json(random_call_id(), element["name"].get<std::string>(),
                   chat::python_json_dumps(params == element.end() ? Json::object() : *params));
}

// The calls of a whole "required" reply; nullopt when the text is not such a list (a reply
// cut by max_tokens).
std::optional<std::vector<Json>> parse_required_calls(const std::string& text) {
  const std::optional<Json> list = chat::python_json_loads(text);
  if (!list || !list->is_array()) return std::nullopt;
  std::vector<Json> calls;
  for (const Json& element : *list) {
    std::optional<Json> call = required_call(element);
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
  }
  return calls;
}

}  // namespace

ChatToolPlan plan_chat_tools(const ChatToolsConfig& config, const ChatRequest& req, SamplingParams* params) {
  check_tools(req.tools);
  ChatToolPlan plan;
  const Json& tc = req.tool_choice;
  if (tc.is_null()) {
    plan.choice = has_tools(req) ? ToolChoice::kAuto : ToolChoice::kNone;
  } else if (tc.is_object()) {
    plan.choice = ToolChoice::kNamed;
    plan.named = tc["function"]["name"].get<std::string>();
  } else if (tc == "none") {
    plan.choice = ToolChoice::kNone;
  } else if (tc == "auto") {
    plan.choice = ToolChoice::kAuto;
  } else if (tc == "required") {
    plan.choice = ToolChoice::kRequired;
  } else {
    bad_request("tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": "
                "{\"name\": ...}}",
                "tool_choice");
  }
  if (plan.choice != ToolChoice::kNone && !has_tools(req)) {
    if (plan.choice == ToolChoice::kAuto) {
      plan.choice = ToolChoice::kNone;  // "auto" without tools: nothing to call
    } else {
      bad_request("When using `tool_choice`, `tools` must be set.", "tool_choice");
    }
  }
  if (plan.choice == ToolChoice::kAuto && (!config.enable_auto_tool_choice || config.tool_call_parser.empty())) {
    bad_request("\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
                "tool_choice");
  }
  if (plan.choice == ToolChoice::kRequired || plan.choice == ToolChoice::kNamed) {
    if (params->structured_outputs) {
      bad_request("You can only either use constraints for structured outputs or tools, not both.", "tool_choice");
    }
    const Json schema = plan.choice == ToolChoice::kRequired ? required_calls_schema(req)
                                                             : named_call_schema(*find_function(req.tools, plan.named));
    params->structured_outputs = StructuredOutputsParams{};
    params->structured_outputs->json = schema.dump();
  }
  if (plan.choice == ToolChoice::kAuto) {
    auto parser = make_tool_parser(config.tool_call_parser, ToolParserContext{req.tools, {}});
    if (parser != nullptr && parser->keeps_special_tokens()) params->skip_special_tokens = false;
  }
  return plan;
}

ChatReplyParser::ChatReplyParser(const ChatToolsConfig& config, const ChatToolPlan& plan, const ChatRequest& req,
                                 std::string_view prompt)
    : plan_(plan), include_reasoning_(req.include_reasoning), parallel_(req.parallel_tool_calls) {
  if (!config.reasoning_parser.empty()) reasoning_ = make_reasoning_parser(config.reasoning_parser, prompt);
  if (plan.choice == ToolChoice::kAuto && !config.tool_call_parser.empty()) {
    // No make_id: each parser draws ids in its format (vLLM's, or mistral's 9 alphanumerics).
    tools_ = make_tool_parser(config.tool_call_parser, ToolParserContext{req.tools, {}});
  }
}

ChatReplyParser::~ChatReplyParser() = default;

ChatReplyMessage ChatReplyParser::whole(const std::string& text) {
  ChatReplyMessage m;
  std::optional<std::string> content = text;
  if (reasoning_) {
    ReasoningSplit s = reasoning_->extract(text);
    if (include_reasoning_) m.reasoning = std::move(s.reasoning);
    content = std::move(s.content);
  }
  switch (plan_.choice) {
    case ToolChoice::kNone:
      m.content = std::move(content);
      break;
    case ToolChoice::kNamed:
      // The grammar made the text the arguments; a reply cut short (max_tokens) has no call.
      m.content = "";
      if (content && chat::python_json_loads(*content)) {
        m.tool_calls.push_back(call_json(random_call_id(), plan_.named, *content));
      }
      break;
    case ToolChoice::kRequired: {
      m.content = "";  // a forced call's reply has no content, cut short or not (vLLM's)
      std::optional<std::vector<Json>> calls = parse_required_calls(content.value_or(""));
      if (!calls) break;
      for (Json& call : *calls) {
        if (!parallel_ && !m.tool_calls.empty()) break;
        m.tool_calls.push_back(std::move(call));
      }
      break;
    }
    case ToolChoice::kAuto: {
      if (tools_ == nullptr) {
        m.content = std::move(content);
        break;
      }
      ExtractedToolCalls e = tools_->extract(content.value_or(""));
      if (!e.tools_called) {
        m.content = std::move(content);
        break;
      }
      m.auto_tools_called = true;
      m.content = std::move(e.content);
      for (const ToolCall& c : e.tool_calls) {
        if (!parallel_ && !m.tool_calls.empty()) break;
        m.tool_calls.push_back(call_json(c.id, c.name, c.arguments));
      }
      break;
    }
  }
  return m;
}

std::vector<Json> ChatReplyParser::feed(std::string_view text) {
  if (!reasoning_) return after_reasoning(text, false);
  return split_deltas(reasoning_->feed(text), false);
}

std::vector<Json> ChatReplyParser::finish() {
  if (!reasoning_) return after_reasoning("", true);
  return split_deltas(reasoning_->finish(), true);
}

std::vector<Json> ChatReplyParser::split_deltas(ReasoningSplit s, bool last) {
  std::vector<Json> out;
  if (s.reasoning && include_reasoning_) out.push_back(Json{{"reasoning", std::move(*s.reasoning)}});
  for (Json& d : after_reasoning(s.content.value_or(""), last)) out.push_back(std::move(d));
  return out;
}

// The grammar makes the reply a JSON list of {"name", "parameters"} objects: a scan of the new
// text finds elements that close (depth back to the list's), each parsed and sent once.
std::vector<Json> ChatReplyParser::closed_required_calls() {
  std::vector<Json> calls;
  for (; scan_at_ < held_.size(); ++scan_at_) {
    const char c = held_[scan_at_];
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '[' || c == '{') {
      if (depth_++ == 1) element_at_ = scan_at_;
    } else if ((c == ']' || c == '}') && --depth_ == 1) {
      const auto element = chat::python_json_loads(std::string_view(held_).substr(element_at_, scan_at_ + 1 - element_at_));
      std::optional<Json> call = element ? required_call(*element) : std::nullopt;
      if (!call || (!parallel_ && next_index_ > 0)) continue;
      (*call)["index"] = next_index_++;
      calls.push_back(std::move(*call));
    }
  }
  return calls;
}

std::vector<Json> ChatReplyParser::after_reasoning(std::string_view content, bool last) {
  std::vector<Json> out;
  switch (plan_.choice) {
    case ToolChoice::kNone:
      if (!content.empty()) out.push_back(Json{{"content", std::string(content)}});
      break;
    case ToolChoice::kNamed:
      // The reply is the arguments: the call's name first, its argument text as it comes.
      if (!named_started_ && (!content.empty() || last)) {
        Json call = call_json(random_call_id(), plan_.named, std::string(content));
        call["index"] = 0;
        out.push_back(Json{{"tool_calls", Json::array({std::move(call)})}});
        named_started_ = true;
      } else if (!content.empty()) {
        out.push_back(Json{{"tool_calls", Json::array({Json{{"index", 0},
                                                              {"function", Json{{"arguments", std::string(content)}}}}})}});
      }
      break;
    case ToolChoice::kRequired: {
      // Each call is sent when its element of the list closes, with its name and arguments.
      held_.append(content);
      std::vector<Json> calls = closed_required_calls();
      if (!calls.empty()) out.push_back(Json{{"tool_calls", Json(std::move(calls))}});
      break;
    }
    case ToolChoice::kAuto: {
      if (tools_ == nullptr) {
        if (!content.empty()) out.push_back(Json{{"content", std::string(content)}});
        break;
      }
      ToolStreamDelta d = tools_->feed(content);
      if (last) {
        ToolStreamDelta tail = tools_->finish();
        d.content += tail.content;
        for (ToolCallDelta& c : tail.tool_calls) d.tool_calls.push_back(std::move(c));
      }
      if (!d.content.empty()) out.push_back(Json{{"content", std::move(d.content)}});
      Json calls = Json::array();
      for (const ToolCallDelta& c : d.tool_calls) {
        if (!parallel_ && c.index > 0) continue;
        Json call = {{"index", c.index}};
        if (c.id) {
          call["id"] = *c.id;
          call["type"] = "function";
        }
        Json fn = Json::object();
        if (c.name) fn["name"] = *c.name;
        fn["arguments"] = c.arguments;
        call["function"] = std::move(fn);
        calls.push_back(std::move(call));
      }
      if (!calls.empty()) {
        auto_tools_called_ = true;
        out.push_back(Json{{"tool_calls", std::move(calls)}});
      }
      break;
    }
  }
  return out;
}

}  // namespace tessera::server
