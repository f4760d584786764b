#include "server/tool_parsers/machine_tool_parser.h"

#include "server/tool_parsers/python_literal.h"
#include "server/tool_parsers/tool_parser_util.h"

namespace tessera::server {

void CallMachine::run(std::string_view text, bool at_end, ToolStreamDelta& out) {
  if (phase_ != Phase::kReading) {
    if (phase_ == Phase::kText) out.content.append(text);
    return;
  }
  buf_.append(text);
  for (;;) {
    const Step step = advance(at_end, out);
    if (step == Step::kMore) continue;
    if (step == Step::kFail) fail(at_end, out);
    return;
  }
}

void CallMachine::start_call(ToolStreamDelta& out, std::string name) {
  ToolCallDelta d;
  d.index = ++index_;
  d.id = ctx_.make_id ? ctx_.make_id() : random_call_id();
  d.name = std::move(name);
  out.tool_calls.push_back(std::move(d));
  open_ = true;
  args_ = 0;
}

void CallMachine::add_argument(ToolStreamDelta& out, std::string_view key, std::string_view json) {
  std::string fragment = args_++ == 0 ? "{" : ", ";
  fragment += python_json_string(key);
  fragment += ": ";
  fragment += json;
  emit(out, fragment);
}

void CallMachine::close_call(ToolStreamDelta& out) {
  emit(out, args_ == 0 ? "{}" : "}");
  open_ = false;
}

void CallMachine::emit(ToolStreamDelta& out, std::string_view fragment) {
  if (out.tool_calls.empty() || out.tool_calls.back().index != index_) {
    out.tool_calls.push_back(ToolCallDelta{index_, std::nullopt, std::nullopt, {}});
  }
  out.tool_calls.back().arguments.append(fragment);
}

// Not well-formed calls after all. Before any call went out, everything held is content.
// After, a call cut short by the reply's end gets its closing brace (its rest is dropped: the
// arguments sent stay valid JSON); malformed text mid-reply is content from where the last
// whole unit ended.
void CallMachine::fail(bool at_end, ToolStreamDelta& out) {
  if (index_ < 0) {
    out.content.append(view().substr(section_));
  } else if (open_) {
    close_call(out);
    if (!at_end) out.content.append(view().substr(content_from_));
  } else {
    out.content.append(view().substr(content_from_));
  }
  phase_ = Phase::kText;
  buf_.clear();
}

namespace {

class MachineToolParser final : public ToolParser {
 public:
  MachineToolParser(ToolParserContext ctx, CallMachineFactory make)
      : ctx_(std::move(ctx)), make_(make), stream_(make_(ctx_)) {}
  MachineToolParser(const MachineToolParser&) = delete;  // stream_ refers to ctx_
  MachineToolParser& operator=(const MachineToolParser&) = delete;

  ExtractedToolCalls extract(const std::string& text) override {
    ExtractedToolCalls result;
    result.content = text;
    try {
      const std::unique_ptr<CallMachine> whole = make_(ctx_);
      ToolStreamDelta out;
      whole->run(text, /*at_end=*/true, out);
      if (!whole->succeeded()) return result;
      result.tools_called = true;
      result.tool_calls = join_calls(out.tool_calls);
      result.content = text.substr(0, whole->section());
      if (result.content->empty()) result.content.reset();
    } catch (...) {
      result = ExtractedToolCalls{false, {}, text};
    }
    return result;
  }

  ToolStreamDelta feed(std::string_view delta) override { return step(delta, false); }
  ToolStreamDelta finish() override { return step({}, true); }

 private:
  ToolStreamDelta step(std::string_view delta, bool at_end) {
    ToolStreamDelta out;
    if (broken_) {
      out.content.assign(delta);
      return out;
    }
    try {
      stream_->run(delta, at_end, out);
    } catch (...) {
      broken_ = true;
      out = ToolStreamDelta{};
      out.content.assign(delta);
    }
    return out;
  }

  ToolParserContext ctx_;
  CallMachineFactory make_;
  std::unique_ptr<CallMachine> stream_;
  bool broken_ = false;
};

}  // namespace

std::unique_ptr<ToolParser> make_machine_tool_parser(ToolParserContext ctx, CallMachineFactory make) {
  return std::make_unique<MachineToolParser>(std::move(ctx), make);
}

}  // namespace tessera::server
