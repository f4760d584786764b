// deepseek_v3: content, then
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>
//   (more calls, usually after a newline) <｜tool▁calls▁end｜>
// As vLLM: the arguments are the raw text between the fences, unparsed; text between calls
// and after the block is dropped; the call type must be "function". Unlike vLLM's single-line
// regex, arguments may span lines. A call that does not match the format makes the whole
// reply content.
#include <algorithm>

#include "server/tool_parsers/json_scan.h"
#include "server/tool_parsers/parsers.h"

namespace tessera::server {
namespace {

constexpr std::string_view kCallsBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kCallsEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kSep = "<｜tool▁sep｜>";
constexpr std::string_view kFence = "\n```json\n";
constexpr std::string_view kArgsEnd = "\n```<｜tool▁call▁end｜>";
constexpr std::string_view kFunction = "function";
// The type and the name are one short line each; longer ones are not this format.
constexpr size_t kMaxTypeBytes = 64;
constexpr size_t kMaxNameBytes = 1024;

class DeepSeekV3ToolParser final : public ScanningToolParser {
 public:
  using ScanningToolParser::ScanningToolParser;
  bool keeps_special_tokens() const override { return true; }

 protected:
  std::unique_ptr<ScanningToolParser> fresh() const override {
    return std::make_unique<DeepSeekV3ToolParser>(context());
  }

  void scan(bool at_end) override {
    bool more = true;
    while (more && active()) {
      switch (state_) {
        case State::kText: more = scan_text(at_end); break;
        case State::kBetween: more = scan_between(at_end); break;
        case State::kType: more = scan_type(at_end); break;
        case State::kName: more = scan_name(at_end); break;
        case State::kFence: more = scan_fence(at_end); break;
        case State::kArgs: more = scan_args(at_end); break;
        case State::kTail: consume(pending().size()); more = false; break;
      }
    }
  }

 private:
  enum class State { kText, kBetween, kType, kName, kFence, kArgs, kTail };

  bool scan_text(bool at_end) {
    std::string_view p = pending();
    const size_t at = p.find(kCallsBegin);
    if (at == std::string_view::npos) {
      const size_t n = p.size() - (at_end ? 0 : partial_marker_len(p, kCallsBegin));
      emit_content(p.substr(0, n));
      consume(n);
      return false;
    }
    emit_content(p.substr(0, at));
    consume(at);
    begin_calls();
    consume(kCallsBegin.size());
    state_ = State::kBetween;
    return true;
  }

  // Inside the block, outside a call: the next call, or the end of the block.
  bool scan_between(bool at_end) {
    std::string_view p = pending();
    const size_t call = p.find(kCallBegin);
    const size_t end = p.find(kCallsEnd);
    if (end != std::string_view::npos && end < call) {
      consume(end + kCallsEnd.size());
      state_ = State::kTail;
      return true;
    }
    if (call == std::string_view::npos) {
      const size_t keep = at_end ? 0 : std::max(partial_marker_len(p, kCallBegin), partial_marker_len(p, kCallsEnd));
      consume(p.size() - keep);
      return false;
    }
    consume(call + kCallBegin.size());
    state_ = State::kType;
    return true;
  }

  // The call type, up to <｜tool▁sep｜>.
  bool scan_type(bool at_end) {
    std::string_view p = pending();
    const size_t sep = p.find(kSep);
    if (sep == std::string_view::npos) {
      if (at_end || p.size() > kMaxTypeBytes + kSep.size()) fail();
      return false;
    }
    if (p.substr(0, sep) != kFunction) {
      fail();
      return false;
    }
    consume(sep + kSep.size());
    state_ = State::kName;
    return true;
  }

  // The function name: the rest of the line.
  bool scan_name(bool at_end) {
    std::string_view p = pending();
    const size_t nl = p.find('\n');
    if (nl == std::string_view::npos) {
      if (at_end || p.size() > kMaxNameBytes) fail();
      return false;
    }
    if (nl == 0 || nl > kMaxNameBytes) {
      fail();
      return false;
    }
    name_.assign(p.substr(0, nl));
    consume(nl);
    state_ = State::kFence;
    return true;
  }

  // "\n```json\n" after the name; the call goes out once it is there.
  bool scan_fence(bool at_end) {
    std::string_view p = pending();
    if (p.size() < kFence.size()) {
      if (at_end || kFence.substr(0, p.size()) != p) fail();
      return false;
    }
    if (p.substr(0, kFence.size()) != kFence) {
      fail();
      return false;
    }
    consume(kFence.size());
    start_call(name_);
    state_ = State::kArgs;
    return true;
  }

  // Raw arguments up to "\n```<｜tool▁call▁end｜>", holding back a possible start of it.
  bool scan_args(bool at_end) {
    std::string_view p = pending();
    const size_t end = p.find(kArgsEnd);
    if (end == std::string_view::npos) {
      if (at_end) {
        fail();  // the call never closed
        return false;
      }
      const size_t n = p.size() - partial_marker_len(p, kArgsEnd);
      emit_arguments(p.substr(0, n));
      consume(n);
      return false;
    }
    emit_arguments(p.substr(0, end));
    consume(end + kArgsEnd.size());
    state_ = State::kBetween;
    return true;
  }

  State state_ = State::kText;
  std::string name_;
};

}  // namespace

std::unique_ptr<ToolParser> make_deepseek_v3_tool_parser(ToolParserContext ctx) {
  return std::make_unique<DeepSeekV3ToolParser>(std::move(ctx));
}

}  // namespace tessera::server
