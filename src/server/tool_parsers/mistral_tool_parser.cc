// mistral: content, then [TOOL_CALLS] and either
//   - a JSON list [{"name": "f", "arguments": {...}}, ...] (tokenizers before v11): arguments
//     are json.dumps(arguments, ensure_ascii=False), "{}" when missing, text after the list
//     is dropped; a list that does not parse makes the whole reply content;
//   - name[ARGS]{...} per call, each call after its own [TOOL_CALLS] (v11 and later): the
//     arguments are the raw text up to the next [TOOL_CALLS] or the end, unparsed, as vLLM
//     returns them; v11's name[CALL_ID]id[ARGS] form is accepted too.
// Which one is decided by the text (a list starts with '['), not by the tokenizer version.
#include "server/tool_parsers/json_scan.h"
#include "server/tool_parsers/parsers.h"

namespace tessera::server {
namespace {

constexpr std::string_view kToolCalls = "[TOOL_CALLS]";
constexpr std::string_view kArgs = "[ARGS]";
constexpr std::string_view kCallId = "[CALL_ID]";

// The function name in the text before a v11 call's '{': [CALL_ID]... cut, [ARGS] removed.
std::string v11_name(std::string raw) {
  if (size_t id = raw.find(kCallId); id != std::string::npos) raw.resize(id);
  for (size_t at = raw.find(kArgs); at != std::string::npos; at = raw.find(kArgs)) raw.erase(at, kArgs.size());
  return raw;
}

class MistralToolParser final : public ScanningToolParserFor<MistralToolParser> {
 public:
  using ScanningToolParserFor::ScanningToolParserFor;
  bool keeps_special_tokens() const override { return true; }

 protected:
  // Mistral requires 9 alphanumerics (the server's make_id supplies them normally).
  std::string fallback_id() const override;

  bool scan_step(bool at_end) override {
    switch (state_) {
      case State::kText: return scan_text(at_end);
      case State::kFormat: return scan_format();
      case State::kListItem: return scan_list_item();
      case State::kCall: return scan_call(at_end);
      case State::kListNext: return scan_list_next(at_end);
      case State::kV11Name: return scan_v11_name(at_end);
      case State::kV11Args: return scan_v11_args(at_end);
      case State::kTail: return drop_rest();
    }
    return false;
  }

 private:
  enum class State { kText, kFormat, kListItem, kCall, kListNext, kV11Name, kV11Args, kTail };

  bool scan_text(bool at_end) {
    if (!scan_content_until(kToolCalls, at_end)) return false;
    state_ = State::kFormat;
    return true;
  }

  // After the first [TOOL_CALLS]: '[' starts the list format, anything else a v11 name.
  bool scan_format() {
    const std::string_view p = skip_space();
    if (p.empty()) return false;
    if (p[0] == '[') {
      consume(1);
      state_ = State::kListItem;
    } else {
      name_.clear();
      state_ = State::kV11Name;
    }
    return true;
  }

  // Start of a list element (or the end of an empty list).
  bool scan_list_item() {
    const std::string_view p = skip_space();
    if (p.empty()) return false;
    if (p[0] == ']' && calls_sent() == 0) {
      state_ = State::kTail;  // an empty list: no calls, the reply is content
      return true;
    }
    if (p[0] != '{') return fail();
    call_ = CallObjectScanner({"arguments"});
    state_ = State::kCall;
    return true;
  }

  bool scan_call(bool at_end) {
    if (scan_call_object(call_, at_end, "{}") != CallProgress::kDone) return false;
    state_ = State::kListNext;
    return true;
  }

  bool scan_list_next(bool at_end) {
    const std::string_view p = skip_space();
    if (p.empty()) return at_end ? fail() : false;  // at the end: the list never closed
    consume(1);
    if (p[0] == ',') {
      state_ = State::kListItem;
    } else if (p[0] == ']') {
      state_ = State::kTail;
    } else {
      fail();
    }
    return true;
  }

  // v11: the name runs to the first '{'; a piece without one is dropped, as vLLM does.
  bool scan_v11_name(bool at_end) {
    std::string_view p = pending();
    const size_t brace = p.find('{');
    const size_t marker = p.find(kToolCalls);
    if (marker != std::string_view::npos && marker < brace) {
      consume(marker + kToolCalls.size());
      name_.clear();
      return true;
    }
    if (brace == std::string_view::npos) {
      name_.append(consume_until(kToolCalls, at_end).first);  // no marker either
      return false;
    }
    name_.append(p.substr(0, brace));
    consume(brace);
    std::string name = v11_name(std::move(name_));
    name_.clear();
    if (name.empty()) return fail();  // arguments without a function name
    start_call(name);
    state_ = State::kV11Args;
    return true;
  }

  // v11 arguments: raw text up to the next [TOOL_CALLS] (held back while it may be starting).
  bool scan_v11_args(bool at_end) {
    if (!scan_arguments_until(kToolCalls, at_end)) return false;
    state_ = State::kV11Name;
    return true;
  }

  State state_ = State::kText;
  CallObjectScanner call_;
  std::string name_;
};

std::string MistralToolParser::fallback_id() const {
  return random_tool_id("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 9);
}

}  // namespace

std::unique_ptr<ToolParser> make_mistral_tool_parser(ToolParserContext ctx) {
  return std::make_unique<MistralToolParser>(std::move(ctx));
}

}  // namespace tessera::server
