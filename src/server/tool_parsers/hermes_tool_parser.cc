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

class HermesToolParser final : public ScanningToolParserFor<HermesToolParser> {
 public:
  using ScanningToolParserFor::ScanningToolParserFor;
  // vLLM turns skip_special_tokens off for hermes: some tokenizers mark <tool_call> special.
  bool keeps_special_tokens() const override { return true; }

 protected:
  bool scan_step(bool at_end) override {
    switch (state_) {
      case State::kText: return scan_text(at_end);
      case State::kCall: return scan_call(at_end);
      case State::kAfterJson: return scan_after_json(at_end);
      case State::kBetween: return scan_between(at_end);
    }
    return false;
  }

 private:
  enum class State { kText, kCall, kAfterJson, kBetween };

  // Content up to the first <tool_call>, holding back a possible start of the tag.
  bool scan_text(bool at_end) {
    if (!scan_content_until(kStart, at_end)) return false;
    open_call();
    return true;
  }

  void open_call() {
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
    const std::string_view p = skip_space();
    if (p.empty()) return false;  // at the end: a complete call without its closing tag
    switch (match_marker(p, kEnd)) {
      case MarkerMatch::kFull:
        consume(kEnd.size());
        state_ = State::kBetween;
        return true;
      case MarkerMatch::kPartial:
        if (!at_end) return false;
        break;
      case MarkerMatch::kNo: break;
    }
    return fail();  // json.loads would see extra data after the object
  }

  // Between calls: everything up to the next <tool_call> is dropped.
  bool scan_between(bool at_end) {
    if (!consume_until(kStart, at_end).second) return false;
    consume(kStart.size());
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
