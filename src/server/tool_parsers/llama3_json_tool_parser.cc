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

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skip_ws(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && is_ws(s[i])) ++i;
  return i;
}

class Llama3JsonToolParser final : public ScanningToolParser {
 public:
  explicit Llama3JsonToolParser(ToolParserContext ctx) : ScanningToolParser(std::move(ctx)) {
    begin_calls();  // the whole reply is held until it is known to start with a call
  }

 protected:
  std::unique_ptr<ScanningToolParser> fresh() const override {
    return std::make_unique<Llama3JsonToolParser>(context());
  }

  void scan(bool at_end) override {
    bool more = true;
    while (more && active()) {
      switch (state_) {
        case State::kStart: more = scan_start(at_end); break;
        case State::kCall: more = scan_call(at_end); break;
        case State::kAfterCall: more = scan_after_call(); break;
        case State::kNextCall: more = scan_next_call(); break;
        case State::kTail: consume(pending().size()); more = false; break;
      }
    }
  }

 private:
  enum class State { kStart, kCall, kAfterCall, kNextCall, kTail };

  // Whitespace, then <|python_tag|> (at most once), then whitespace, then '{'.
  bool scan_start(bool at_end) {
    consume(skip_ws(pending()));
    std::string_view p = pending();
    if (p.empty()) {
      if (at_end) fail();  // blank or tag-only reply: content
      return false;
    }
    if (!tag_seen_ && p[0] == '<') {
      if (p.substr(0, kPythonTag.size()) == kPythonTag) {
        consume(kPythonTag.size());
        tag_seen_ = true;
        return true;
      }
      if (kPythonTag.substr(0, p.size()) == p && !at_end) return false;
    }
    if (p[0] != '{') {
      fail();  // not a call: the reply is content
      return false;
    }
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
    consume(skip_ws(pending()));
    std::string_view p = pending();
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
    consume(skip_ws(pending()));
    std::string_view p = pending();
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
