// Tool-call parsers (vLLM's --tool-call-parser NAME): the model's reply text -> OpenAI
// tool calls plus the content outside them, whole (non-streamed replies) or delta by delta
// (streamed ones). One parser object per reply choice; each format is one file here.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::server {

// One call as a whole: arguments is JSON text (an object), as OpenAI's function.arguments.
struct ToolCall {
  std::string id;  // "chatcmpl-tool-<32 hex>" (mistral: 9 alphanumerics), from ToolParserContext::make_id
  std::string name;
  std::string arguments;
};

// A whole reply: tools_called false means "no tool call here", content is then the reply
// unchanged. Otherwise content is the text outside the calls (nullopt when there is none).
struct ExtractedToolCalls {
  bool tools_called = false;
  std::vector<ToolCall> tool_calls;
  std::optional<std::string> content;
};

// A streamed fragment of call `index`: the first fragment of a call carries id and name
// (and maybe the start of its arguments), the next ones only argument text. Concatenating
// a call's argument fragments gives the same JSON text the whole-reply parse returns.
struct ToolCallDelta {
  int index = 0;
  std::optional<std::string> id;
  std::optional<std::string> name;
  std::string arguments;
};

// What one streamed step contributes: content text and/or call fragments (both may be empty:
// the parser holds text back until it knows whether it starts a call).
struct ToolStreamDelta {
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return content.empty() && tool_calls.empty(); }
};

struct ToolParserContext {
  nlohmann::ordered_json tools;      // the request's tools (OpenAI shape), possibly null
  std::function<std::string()> make_id;  // a fresh call id (the server's; tests pass their own)
};

class ToolParser {
 public:
  virtual ~ToolParser() = default;
  // The whole reply at once. Text that looks like a call but does not parse (truncated JSON,
  // unbalanced tags) is content, never an error.
  virtual ExtractedToolCalls extract(const std::string& text) = 0;
  // Streaming: the next piece of the reply's text; returns what can be sent now.
  virtual ToolStreamDelta feed(std::string_view delta) = 0;
  // The reply ended: whatever was held back (an unfinished call becomes content, or its
  // remaining argument text when its name was sent).
  virtual ToolStreamDelta finish() = 0;
  // Whether the format's markers are special tokens that detokenization must keep
  // (vLLM's parsers set skip_special_tokens = false for such requests).
  virtual bool keeps_special_tokens() const { return false; }
};

// nullptr for an unknown name.
std::unique_ptr<ToolParser> make_tool_parser(std::string_view name, ToolParserContext ctx);
// The names make_tool_parser knows, for --tool-call-parser's help and its error message.
std::vector<std::string> tool_parser_names();

}  // namespace tessera::server
