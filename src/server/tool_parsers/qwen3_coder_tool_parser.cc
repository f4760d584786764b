// Qwen3-Coder's XML-ish tool calls:
//   <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>\n</tool_call>
// Text before the first <tool_call> (or a bare <function=) is content; between and after calls
// only the <function=...>...</function> blocks count, as in vLLM. Values are raw text typed by
// the request's tool schema the way vLLM's qwen3_coder parser types them.
// A CallMachine (machine_tool_parser.h) whose units are a function's header, one parameter
// and a function's end.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <string_view>

#include "server/tool_parsers/machine_tool_parser.h"
#include "server/tool_parsers/parsers.h"
#include "server/tool_parsers/python_literal.h"
#include "server/tool_parsers/tool_parser_util.h"

namespace tessera::server {
namespace {

using nlohmann::ordered_json;

constexpr std::string_view kToolCall = "<tool_call>";
constexpr std::string_view kToolCallEnd = "</tool_call>";
constexpr std::string_view kFunction = "<function=";
constexpr std::string_view kFunctionEnd = "</function>";
constexpr std::string_view kParameter = "<parameter=";
constexpr std::string_view kParameterEnd = "</parameter>";
constexpr std::string_view kSpace = " \t\n\r";
// Longer "names" are not names; the bound keeps the search for their '>' short.
constexpr size_t kMaxName = 1024;

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return out;
}

// Python's str(t).strip().lower() of a schema type name.
std::string type_key(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\n\r\f\v");
  if (b == std::string_view::npos) return {};
  return ascii_lower(s.substr(b, s.find_last_not_of(" \t\n\r\f\v") - b + 1));
}

bool starts_with_any(std::string_view s, std::initializer_list<std::string_view> tags) {
  return std::any_of(tags.begin(), tags.end(), [&](std::string_view t) { return s.starts_with(t); });
}

// s is a proper start of one of the tags: the rest of the tag may still arrive.
bool could_become(std::string_view s, std::initializer_list<std::string_view> tags) {
  return std::any_of(tags.begin(), tags.end(),
                     [&](std::string_view t) { return s.size() < t.size() && t.starts_with(s); });
}

// vLLM rejects names that look like template leftovers ("{{ tool.name }}") or stray markup.
bool valid_function_name(std::string_view name) {
  return !name.empty() && name.find_first_of("{}<>\"' \t\n\r") == std::string_view::npos && valid_utf8(name);
}

// vLLM's lookup: the named function's parameters.properties, or the parameters object itself
// when it has no "properties"; nullptr (every value a string) when the request lacks the tool.
const ordered_json* find_properties(const ordered_json& tools, std::string_view name) {
  if (!tools.is_array()) return nullptr;
  for (const ordered_json& tool : tools) {
    if (!tool.is_object()) continue;
    const auto type = tool.find("type");
    const auto fn = tool.find("function");
    if ((type != tool.end() && *type != "function") || fn == tool.end() || !fn->is_object()) continue;
    const auto fname = fn->find("name");
    if (fname == fn->end() || !fname->is_string() || fname->get_ref<const std::string&>() != name) continue;
    const auto params = fn->find("parameters");
    if (params == fn->end() || !params->is_object()) return nullptr;
    const auto props = params->find("properties");
    if (props == params->end()) return &*params;
    return props->is_object() ? &*props : nullptr;
  }
  return nullptr;
}

struct ParamType {
  std::string name = "string";
  bool allows_null = false;
};

// "type" (lowercased), else the first non-null type of "anyOf"; null allowed when listed.
ParamType param_type(const ordered_json& spec) {
  ParamType t;
  if (!spec.is_object()) return t;
  const auto type_name = [](const ordered_json& j) {
    return j.is_string() ? type_key(j.get_ref<const std::string&>()) : std::string("<not a string>");
  };
  if (const auto type = spec.find("type"); type != spec.end()) {
    t.name = type_name(*type);
    t.allows_null = t.name == "null";
    return t;
  }
  const auto any_of = spec.find("anyOf");
  if (any_of == spec.end() || !any_of->is_array()) return t;
  bool picked = false;
  for (const ordered_json& option : *any_of) {
    if (!option.is_object() || !option.contains("type")) continue;
    const std::string name = type_name(option["type"]);
    if (name == "null") {
      t.allows_null = true;
    } else if (!picked) {
      t.name = name;
      picked = true;
    }
  }
  return t;
}

// A number parameter: integral values print as ints, as vLLM's float -> int step does. inf and
// nan stay strings (vLLM fails on inf; nan already stays a string there).
std::string number_json(std::string_view raw) {
  const std::optional<double> x = python_float(raw);
  if (!x || !std::isfinite(*x)) return python_json_string(raw);
  if (std::floor(*x) == *x) return python_int_of_float(*x);
  return python_float_repr(*x);
}

// Objects, arrays and unknown types: json.loads, then ast.literal_eval, then the raw string.
// A container that decodes to a string is decoded once more (a model taught on
// json.dumps(str(dict)) writes "{'k': 'v'}" in quotes).
std::string literal_json(std::string_view raw, bool container) {
  if (container) {
    if (std::optional<PyValue> v = python_json_loads(raw)) {
      if (v->kind == PyValue::Kind::kStr) {
        if (std::optional<PyValue> inner = python_literal_eval(v->text)) return python_json_dumps(*inner);
      }
      return python_json_dumps(*v);
    }
  }
  // ast.literal_eval strips leading spaces and tabs only.
  const size_t b = raw.find_first_not_of(" \t");
  std::optional<PyValue> v = python_literal_eval(b == std::string_view::npos ? std::string_view{} : raw.substr(b));
  if (!v) return python_json_string(raw);
  if (container && v->kind == PyValue::Kind::kStr) {
    if (std::optional<PyValue> inner = python_literal_eval(v->text)) return python_json_dumps(*inner);
  }
  return python_json_dumps(*v);
}

// One parameter's value as JSON text, typed by its schema as vLLM's _convert_param_value does.
std::string convert_param(std::string_view raw, const std::string& name, const ordered_json* props) {
  if (props == nullptr || !props->contains(name)) return python_json_string(raw);
  const ParamType type = param_type((*props)[name]);
  const std::string lower = ascii_lower(raw);
  const bool null_word = lower == "null" || lower == "none";
  if (type.allows_null && null_word) return "null";
  const std::string& t = type.name;
  if (t == "string" || t == "str" || t == "text" || t == "varchar" || t == "char" || t == "enum") {
    return python_json_string(raw);
  }
  if (null_word) return "null";
  if (starts_with_any(t, {"int", "uint", "long", "short", "unsigned"})) {
    const std::optional<PyValue> v = python_int(raw);
    return v ? v->text : python_json_string(raw);
  }
  if (starts_with_any(t, {"num", "float"})) return number_json(raw);
  if (t == "boolean" || t == "bool" || t == "binary") return lower == "true" ? "true" : "false";
  const bool container = t == "object" || t == "array" || t == "arr" || t.starts_with("dict") || t.starts_with("list");
  return literal_json(raw, container);
}

enum class Stage { kContent, kSeek, kFuncName, kBody };

class Qwen3CoderMachine final : public CallMachine {
 public:
  using CallMachine::CallMachine;

 private:
  Step advance(bool at_end, ToolStreamDelta& out) override {
    switch (stage_) {
      case Stage::kContent: return content(at_end, out);
      case Stage::kSeek: return seek(at_end);
      case Stage::kFuncName: return function_name(at_end, out);
      case Stage::kBody: return body(at_end, out);
    }
    return Step::kWait;
  }

  // Content up to the first <tool_call> or <function=; a possible start of one is held.
  Step content(bool at_end, ToolStreamDelta& out) {
    const size_t marker = std::min(buf_.find(kToolCall, pos_), buf_.find(kFunction, pos_));
    if (marker != std::string::npos) {
      out.content.append(view().substr(pos_, marker - pos_));
      pos_ = section_ = marker;
      stage_ = Stage::kSeek;
      return Step::kMore;
    }
    const size_t keep = at_end ? 0 : partial_marker_len(view().substr(pos_), {kToolCall, kFunction});
    out.content.append(view().substr(pos_, buf_.size() - keep - pos_));
    pos_ = buf_.size() - keep;
    if (at_end) done();
    return Step::kWait;
  }

  // The next <function=; tags and text around calls are skipped, as vLLM's regexes do.
  Step seek(bool at_end) {
    const size_t f = buf_.find(kFunction, pos_);
    if (f == std::string::npos) {
      if (!at_end) {
        pos_ = std::max(pos_, buf_.size() - std::min(buf_.size(), kFunction.size() - 1));
        return Step::kWait;
      }
      if (index_ < 0) return Step::kFail;  // markers but no call: all of it is content
      done();
      return Step::kWait;
    }
    pos_ = f + kFunction.size();
    stage_ = Stage::kFuncName;
    return Step::kMore;
  }

  Step function_name(bool at_end, ToolStreamDelta& out) {
    const size_t gt = view().substr(0, pos_ + kMaxName + 1).find('>', pos_);
    if (gt == std::string::npos) return buf_.size() - pos_ > kMaxName ? Step::kFail : short_text(at_end);
    const std::string_view name = view().substr(pos_, gt - pos_);
    if (!valid_function_name(name)) return Step::kFail;
    props_ = find_properties(ctx_.tools, name);
    start_call(out, std::string(name));
    content_from_ = pos_ = gt + 1;
    stage_ = Stage::kBody;
    return Step::kMore;
  }

  // Inside a function: parameters until </function>; stray text between them is skipped.
  Step body(bool at_end, ToolStreamDelta& out) {
    pos_ = std::min(buf_.find_first_not_of(kSpace, pos_), buf_.size());
    const std::string_view rest = view().substr(pos_);
    if (rest.empty()) return short_text(at_end);
    if (rest.starts_with(kFunctionEnd)) {
      close_call(out);
      content_from_ = pos_ += kFunctionEnd.size();
      stage_ = Stage::kSeek;
      return Step::kMore;
    }
    if (rest.starts_with(kParameter)) return parameter(at_end, out);
    if (!at_end && could_become(rest, {kFunctionEnd, kParameter})) return Step::kWait;
    const size_t next = std::min(buf_.find(kParameter, pos_ + 1), buf_.find(kFunctionEnd, pos_ + 1));
    if (next != std::string::npos) {
      pos_ = next;
      return Step::kMore;
    }
    if (at_end) return Step::kFail;
    pos_ = std::max(pos_, buf_.size() - (kParameter.size() - 1));
    return Step::kWait;
  }

  Step parameter(bool at_end, ToolStreamDelta& out) {
    const size_t name_at = pos_ + kParameter.size();
    const size_t gt = view().substr(0, name_at + kMaxName + 1).find('>', name_at);
    if (gt == std::string::npos) return buf_.size() - name_at > kMaxName ? Step::kFail : short_text(at_end);
    const std::string name(view().substr(name_at, gt - name_at));
    if (name.empty() || name.find_first_of("<\n") != std::string::npos || !valid_utf8(name)) return Step::kFail;
    size_t end = 0;
    if (const Step s = value_end(gt + 1, at_end, end); s != Step::kMore) return s;
    std::string_view value = view().substr(gt + 1, end - gt - 1);
    // The template frames values in newlines; vLLM drops one on each side.
    if (value.starts_with('\n')) value.remove_prefix(1);
    if (value.ends_with('\n')) value.remove_suffix(1);
    add_argument(out, name, convert_param(value, name, props_));
    content_from_ = pos_ = end + kParameterEnd.size();
    scan_ = 0;
    return Step::kMore;
  }

  // The </parameter> that ends a value: the first one followed (after whitespace) by another
  // tag of the call or by the reply's end, so a value may quote "</parameter>" itself. Failing
  // that, at the end of the reply, the first </parameter> at all.
  Step value_end(size_t value_at, bool at_end, size_t& end) {
    for (size_t from = std::max(value_at, scan_);;) {
      const size_t i = buf_.find(kParameterEnd, from);
      if (i == std::string::npos) break;
      const size_t after = std::min(buf_.find_first_not_of(kSpace, i + kParameterEnd.size()), buf_.size());
      const std::string_view rest = view().substr(after);
      if ((rest.empty() && at_end) || starts_with_any(rest, {kParameter, kFunctionEnd, kToolCallEnd})) {
        end = i;
        return Step::kMore;
      }
      if (!at_end && (rest.empty() || could_become(rest, {kParameter, kFunctionEnd, kToolCallEnd}))) {
        scan_ = i;  // undecided: look here again when more text comes
        return Step::kWait;
      }
      from = i + 1;
    }
    if (!at_end) {
      scan_ = std::max(value_at, buf_.size() - std::min(buf_.size(), kParameterEnd.size() - 1));
      return Step::kWait;
    }
    end = buf_.find(kParameterEnd, value_at);
    return end == std::string::npos ? Step::kFail : Step::kMore;
  }

  Stage stage_ = Stage::kContent;
  size_t scan_ = 0;  // where value_end resumes its search
  const ordered_json* props_ = nullptr;
};

}  // namespace

std::unique_ptr<ToolParser> make_qwen3_coder_tool_parser(ToolParserContext ctx) {
  return make_machine_tool_parser<Qwen3CoderMachine>(std::move(ctx));
}

}  // namespace tessera::server
