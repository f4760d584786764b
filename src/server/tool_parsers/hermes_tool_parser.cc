// hermes: <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>, any number of times
// (Hermes 2 Pro / 3, Qwen2.5, Qwen3). As vLLM: the content is the text before the first
// <tool_call>; text between and after calls is dropped; a final call may lack its closing tag
// when its JSON is complete; any call that does not parse makes the whole reply content.
// Arguments are json.dumps(arguments, ensure_ascii=False) of the parsed value.
#include "server/tool_parsers/json_scan.h"
#include "server/tool_parsers/parsers.h"

namespace tessera::server {
namespace {

constexpr std::string_view kStart = "<tool_call>";
constexpr std::string_view kEnd = "</tool_call>";

size_t skip_ws(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  return i;
}

class HermesToolParser final : public ScanningToolParser {
 public:
  using ScanningToolParser::ScanningToolParser;
  // vLLM turns skip_special_tokens off for hermes: some tokenizers mark <tool_call> special.
  bool keeps_special_tokens() const override { return true; }

 protected:
  std::unique_ptr<ScanningToolParser> fresh() const override {
    return std::make_unique<HermesToolParser>(context());
  }

  void scan(bool at_end) override {
    bool more = true;
    while (more && active()) {
      switch (state_) {
        case State::kText: more = scan_text(at_end); break;
        case State::kCall: more = scan_call(at_end); break;
        case State::kAfterJson: more = scan_after_json(at_end); break;
        case State::kBetween: more = scan_between(at_end); break;
      }
    }
  }

 private:
  enum class State { kText, kCall, kAfterJson, kBetween };

  // Content up to the first <tool_call>, holding back a possible start of the tag.
  bool scan_text(bool at_end) {
    std::string_view p = pending();
    const size_t at = p.find(kStart);
    if (at == std::string_view::npos) {
      const size_t n = p.size() - (at_end ? 0 : partial_marker_len(p, kStart));
      emit_content(p.substr(0, n));
      consume(n);
      return false;
    }
    emit_content(p.substr(0, at));
    consume(at);
    begin_calls();
    open_call();
    return true;
  }

  void open_call() {
    consume(kStart.size());
    call_ = CallObjectScanner({"arguments"});
    state_ = State::kCall;
  }

  bool scan_call(bool at_end) {
    const CallProgress r = scan_call_object(call_, at_end, nullptr);
    if (r != CallProgress::kDone) return false;
    state_ = State::kAfterJson;
    return true;
  }

  // After the JSON: whitespace, then </tool_call> or the end of the reply.
  bool scan_after_json(bool at_end) {
    consume(skip_ws(pending()));
    std::string_view p = pending();
    if (p.empty()) return false;  // at the end: a complete call without its closing tag
    if (p.substr(0, kEnd.size()) == kEnd) {
      consume(kEnd.size());
      state_ = State::kBetween;
      return true;
    }
    if (kEnd.substr(0, p.size()) == p && !at_end) return false;
    fail();  // json.loads would see extra data after the object
    return false;
  }

  // Between calls: everything up to the next <tool_call> is dropped.
  bool scan_between(bool at_end) {
    std::string_view p = pending();
    const size_t at = p.find(kStart);
    if (at == std::string_view::npos) {
      consume(p.size() - (at_end ? 0 : partial_marker_len(p, kStart)));
      return false;
    }
    consume(at);
    open_call();
    return true;
  }

  State state_ = State::kText;
  CallObjectScanner call_;
};

}  // namespace

std::unique_ptr<ToolParser> make_hermes_tool_parser(ToolParserContext ctx) {
  return std::make_unique<HermesToolParser>(std::move(ctx));
}

}  // namespace tessera::server
