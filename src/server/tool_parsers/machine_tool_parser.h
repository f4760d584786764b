// The skeleton of the pythonic and qwen3_coder parsers: a resumable machine reads the reply a
// unit at a time and decides a unit only once the text shows how it ends, so a verdict never
// changes as text grows. extract() runs a fresh machine over the whole reply and the stream
// runs its own, so streamed replies give exactly the calls and fragments of the whole parse.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "server/tool_parsers/tool_parser.h"

namespace tessera::server {

// kMore: go on reading; kWait: the text so far does not decide; kFail: not calls after all.
enum class Step { kMore, kWait, kFail };

class CallMachine {
 public:
  explicit CallMachine(const ToolParserContext& ctx) : ctx_(ctx) {}
  virtual ~CallMachine() = default;
  CallMachine(const CallMachine&) = delete;
  CallMachine& operator=(const CallMachine&) = delete;

  // Reads more of the reply (`at_end`: there is no more) and adds what is decided to `out`.
  void run(std::string_view text, bool at_end, ToolStreamDelta& out);
  // The reply ended as well-formed calls.
  bool succeeded() const { return phase_ == Phase::kDone && index_ >= 0; }
  // Where the calls begin (the whole-reply content is what precedes it).
  size_t section() const { return section_; }

 protected:
  // Reads one unit from pos_.
  virtual Step advance(bool at_end, ToolStreamDelta& out) = 0;

  static Step short_text(bool at_end) { return at_end ? Step::kFail : Step::kWait; }
  std::string_view view() const { return buf_; }
  // The reply ended well: what follows is ignored.
  void done() { phase_ = Phase::kDone; }
  // Sends the next call's index, id and name.
  void start_call(ToolStreamDelta& out, std::string name);
  // Sends `"key": json` as the current call's next argument.
  void add_argument(ToolStreamDelta& out, std::string_view key, std::string_view json);
  // Closes the current call's arguments ("{}" when it has none).
  void close_call(ToolStreamDelta& out);

  const ToolParserContext& ctx_;
  std::string buf_;  // the reply so far (while it may still hold calls)
  size_t pos_ = 0;   // first byte not yet decided
  size_t section_ = 0;
  size_t content_from_ = 0;  // where the last whole unit ended
  int index_ = -1;           // the last call sent
  bool open_ = false;        // ... and its arguments are not closed yet
  int args_ = 0;             // arguments sent for it

 private:
  enum class Phase { kReading, kDone, kText };

  void emit(ToolStreamDelta& out, std::string_view fragment);
  void fail(bool at_end, ToolStreamDelta& out);

  Phase phase_ = Phase::kReading;
};

using CallMachineFactory = std::unique_ptr<CallMachine> (*)(const ToolParserContext&);

// A ToolParser around machines from `make`. An exception (e.g. bad_alloc on absurd input)
// leaves extract()'s reply plain text and turns the rest of a stream into content.
std::unique_ptr<ToolParser> make_machine_tool_parser(ToolParserContext ctx, CallMachineFactory make);

template <class Machine>
std::unique_ptr<ToolParser> make_machine_tool_parser(ToolParserContext ctx) {
  return make_machine_tool_parser(std::move(ctx), [](const ToolParserContext& c) -> std::unique_ptr<CallMachine> {
    return std::make_unique<Machine>(c);
  });
}

}  // namespace tessera::server
