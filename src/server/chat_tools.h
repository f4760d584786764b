// Tool calls and reasoning in chat replies: what a request's tools / tool_choice and the
// server's --enable-auto-tool-choice, --tool-call-parser and --reasoning-parser make of the
// generated text (vLLM's rules). A request's plan is made once; each reply choice gets a
// ChatReplyParser that turns its text into message fields, whole or as stream deltas.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/openai_protocol.h"
#include "server/reasoning/reasoning_parser.h"
#include "server/tool_parsers/tool_parser.h"

namespace tessera::server {

struct ChatToolsConfig {
  bool enable_auto_tool_choice = false;  // --enable-auto-tool-choice
  std::string tool_call_parser;          // --tool-call-parser ("": none)
  std::string reasoning_parser;          // --reasoning-parser ("": none)
};

enum class ToolChoice { kNone, kAuto, kRequired, kNamed };

struct ChatToolPlan {
  ToolChoice choice = ToolChoice::kNone;
  std::string named;  // kNamed: the function the reply calls
};

// Checks tools and tool_choice against the configuration (400s in vLLM's words) and, for
// "required" and a named function, sets params' structured outputs to the calls' JSON Schema
// (so arguments always parse and validate). Also keeps special tokens in the text when the
// tool parser's markers are special tokens.
ChatToolPlan plan_chat_tools(const ChatToolsConfig& config, const ChatRequest& req, SamplingParams* params);

// One reply choice's message fields.
struct ChatReplyMessage {
  std::optional<std::string> reasoning;  // vLLM's message.reasoning
  std::optional<std::string> content;
  nlohmann::ordered_json tool_calls = nlohmann::ordered_json::array();  // OpenAI's tool_calls[]
  bool auto_tools_called = false;  // finish_reason becomes "tool_calls"
};

class ChatReplyParser {
 public:
  // prompt: the rendered prompt (reasoning parsers read how it ends).
  ChatReplyParser(const ChatToolsConfig& config, const ChatToolPlan& plan, const ChatRequest& req,
                  std::string_view prompt);
  ~ChatReplyParser();

  ChatReplyMessage whole(const std::string& text);
  // Streaming: the choice's next text -> delta objects ({"reasoning": ...},
  // {"content": ...}, {"tool_calls": [...]}), in order; finish() flushes what was held.
  std::vector<nlohmann::ordered_json> feed(std::string_view text);
  std::vector<nlohmann::ordered_json> finish();
  bool auto_tools_called() const { return auto_tools_called_; }

 private:
  std::vector<nlohmann::ordered_json> after_reasoning(std::string_view content, bool last);
  // A reasoning parser's piece: its reasoning delta, then what the content part makes.
  std::vector<nlohmann::ordered_json> split_deltas(ReasoningSplit s, bool last);

  ChatToolPlan plan_;
  bool include_reasoning_ = true;
  bool parallel_ = true;
  std::unique_ptr<ReasoningParser> reasoning_;
  std::unique_ptr<ToolParser> tools_;  // auto tool choice
  // "required": the reply so far, scanned up to scan_at_, for list elements that close.
  std::string held_;
  size_t scan_at_ = 0;
  size_t element_at_ = 0;  // where the open element began
  int depth_ = 0;          // JSON nesting at scan_at_
  bool in_string_ = false, escaped_ = false;
  bool named_started_ = false;
  int next_index_ = 0;
  std::vector<nlohmann::ordered_json> closed_required_calls();
  bool auto_tools_called_ = false;
};

}  // namespace tessera::server
