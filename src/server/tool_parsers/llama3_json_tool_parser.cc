// llama3_json (and llama4_json): the reply is, after optional whitespace and <|python_tag|>,
// one or more {"name": "f", "parameters": {...}} objects ("arguments" is accepted too)
// separated by ';'. A reply that does not start with '{' there is plain content, as in vLLM's
// streaming path; text after the last call is dropped and the content is then empty. Any
// object that is not a well-formed call makes the whole reply content.
#include "server/tool_parsers/json_scan.h"
#include "server/tool_parsers/parsers.h"

namespace tessera::server {
namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";

class Llama3JsonToolParser final : public ScanningToolParserFor<Llama3JsonToolParser> {
 public:
  explicit Llama3JsonToolParser(ToolParserContext ctx) : ScanningToolParserFor(std::move(ctx)) {
    begin_calls();  // the whole reply is held until it is known to start with a call
  }

 protected:
  bool scan_step(bool at_end) override {
    switch (state_) {
      case State::kStart: return scan_start(at_end);
      case State::kCall: return scan_call(at_end);
      case State::kAfterCall: return scan_after_call();
      case State::kNextCall: return scan_next_call();
      case State::kTail: return drop_rest();
    }
    return false;
  }

 private:
  enum class State { kStart, kCall, kAfterCall, kNextCall, kTail };

  // Whitespace, then <|python_tag|> (at most once), then whitespace, then '{'.
  bool scan_start(bool at_end) {
    const std::string_view p = skip_space();
    if (p.empty()) return at_end ? fail() : false;  // at the end: blank or tag-only reply, content
    const MarkerMatch tag = tag_seen_ ? MarkerMatch::kNo : match_marker(p, kPythonTag);
    if (tag == MarkerMatch::kFull) {
      consume(kPythonTag.size());
      tag_seen_ = true;
      return true;
    }
    if (tag == MarkerMatch::kPartial && !at_end) return false;
    if (p[0] != '{') return fail();  // not a call: the reply is content
    open_call();
    return true;
  }

  void open_call() {
    call_ = CallObjectScanner({"parameters", "arguments"});
    state_ = State::kCall;
  }

  bool scan_call(bool at_end) {
    if (scan_call_object(call_, at_end, nullptr) != CallProgress::kDone) return false;
    state_ = State::kAfterCall;
    return true;
  }

  // After a call: ';' and another call, or the end of the calls.
  bool scan_after_call() {
    const std::string_view p = skip_space();
    if (p.empty()) return false;
    if (p[0] != ';') {
      state_ = State::kTail;
      return true;
    }
    consume(1);
    state_ = State::kNextCall;
    return true;
  }

  bool scan_next_call() {
    const std::string_view p = skip_space();
    if (p.empty()) return false;
    if (p[0] == '{') {
      open_call();
    } else {
      state_ = State::kTail;
    }
    return true;
  }

  State state_ = State::kStart;
  bool tag_seen_ = false;
  CallObjectScanner call_;
};

}  // namespace

std::unique_ptr<ToolParser> make_llama3_json_tool_parser(ToolParserContext ctx) {
  return std::make_unique<Llama3JsonToolParser>(std::move(ctx));
}

}  // namespace tessera::server
