// deepseek_v3: content, then
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>
//   (more calls, usually after a newline) <｜tool▁calls▁end｜>
// As vLLM: the arguments are the raw text between the fences, unparsed; text between calls
// and after the block is dropped; the call type must be "function". Unlike vLLM's single-line
// regex, arguments may span lines. A call that does not match the format makes the whole
// reply content.
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

class DeepSeekV3ToolParser final : public ScanningToolParserFor<DeepSeekV3ToolParser> {
 public:
  using ScanningToolParserFor::ScanningToolParserFor;
  bool keeps_special_tokens() const override { return true; }

 protected:
  bool scan_step(bool at_end) override {
    switch (state_) {
      case State::kText: return scan_text(at_end);
      case State::kBetween: return scan_between(at_end);
      case State::kType: return scan_type(at_end);
      case State::kName: return scan_name(at_end);
      case State::kFence: return scan_fence(at_end);
      case State::kArgs: return scan_args(at_end);
      case State::kTail: return drop_rest();
    }
    return false;
  }

 private:
  enum class State { kText, kBetween, kType, kName, kFence, kArgs, kTail };

  bool scan_text(bool at_end) {
    if (!scan_content_until(kCallsBegin, at_end)) return false;
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
      const size_t keep = at_end ? 0 : partial_marker_len(p, {kCallBegin, kCallsEnd});
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
    if (sep == std::string_view::npos) return (at_end || p.size() > kMaxTypeBytes + kSep.size()) ? fail() : false;
    if (p.substr(0, sep) != kFunction) return fail();
    consume(sep + kSep.size());
    state_ = State::kName;
    return true;
  }

  // The function name: the rest of the line.
  bool scan_name(bool at_end) {
    std::string_view p = pending();
    const size_t nl = p.find('\n');
    if (nl == std::string_view::npos) return (at_end || p.size() > kMaxNameBytes) ? fail() : false;
    if (nl == 0 || nl > kMaxNameBytes) return fail();
    name_.assign(p.substr(0, nl));
    consume(nl);
    state_ = State::kFence;
    return true;
  }

  // "\n```json\n" after the name; the call goes out once it is there.
  bool scan_fence(bool at_end) {
    const MarkerMatch fence = match_marker(pending(), kFence);
    if (fence != MarkerMatch::kFull) return (fence == MarkerMatch::kNo || at_end) ? fail() : false;
    consume(kFence.size());
    start_call(name_);
    state_ = State::kArgs;
    return true;
  }

  // Raw arguments up to "\n```<｜tool▁call▁end｜>", holding back a possible start of it.
  bool scan_args(bool at_end) {
    if (at_end && pending().find(kArgsEnd) == std::string_view::npos) return fail();  // the call never closed
    if (!scan_arguments_until(kArgsEnd, at_end)) return false;
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
