// Shared pieces of the JSON-carrying tool-call parsers (hermes, llama3_json, mistral,
// deepseek_v3): an incremental JSON re-serializer that writes Python's
// json.dumps(value, ensure_ascii=False) text (what vLLM returns as a call's arguments), an
// incremental scanner of {"name": ..., "arguments": ...} call objects, and the streaming
// skeleton those four are built on.
//
// Both paths of a parser run the same state machine: extract() feeds the whole text to a
// fresh copy and keeps the calls only when nothing went wrong, so a well-formed reply gives
// the same calls, arguments and content whether streamed or not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/tool_parsers/tool_parser.h"
#include "server/tool_parsers/tool_parser_util.h"

namespace tessera::server {

// Incremental re-serializer of one JSON value (Python's json.loads grammar, NaN and Infinity
// included) into json.dumps(value, ensure_ascii=False) text: ", " and ": " separators, floats
// as repr(), integers as written, strings decoded and re-escaped. Output is produced as soon as
// it is final, so a streamed call's arguments can go out while the value is still arriving.
// Invalid UTF-8 inside strings becomes U+FFFD. Nesting uses an explicit stack (no recursion).
class JsonNormalizer {
 public:
  // Consumes bytes of the value (leading whitespace included); stops right after its end.
  // Returns how many bytes of `in` were consumed.
  size_t feed(std::string_view in);
  // No more input: completes a value that ends the text (a bare number), otherwise fails.
  void finish();
  bool done() const { return mode_ == Mode::kDone; }
  bool failed() const { return mode_ == Mode::kFailed; }
  // The normalized text produced since the previous call.
  std::string take_output();
  // Whether the value is a string, and its decoded text (complete once done()).
  bool is_string() const { return top_string_; }
  const std::string& string_value() const { return decoded_; }

 private:
  enum class Mode : uint8_t { kValue, kKey, kColon, kAfterValue, kString, kEscape, kUnicode, kAtom, kDone, kFailed };

  bool step(unsigned char c);  // false: `c` was not consumed (the value ended before it)
  bool step_value(unsigned char c);
  bool step_structure(unsigned char c);
  void step_string(unsigned char c);
  void step_escape(unsigned char c);
  void step_unicode(unsigned char c);
  void open(char bracket);
  void close(char bracket);
  void value_end();
  void finish_atom();
  void string_byte(unsigned char c);
  void flush_utf8();
  void code_point(uint32_t cp);
  void flush_surrogate();
  void put_code_point(uint32_t cp);
  void put_raw(std::string_view s);
  void fail() { mode_ = Mode::kFailed; }

  Mode mode_ = Mode::kValue;
  std::string stack_;  // open brackets, innermost last
  bool first_ = false;  // just after an opening bracket: the closing one may follow
  bool in_key_ = false;
  bool top_string_ = false;
  bool started_ = false;
  std::string out_;
  std::string decoded_;
  std::string atom_;       // a number or literal being read
  std::string utf8_;       // a multi-byte character being read
  size_t utf8_need_ = 0;
  uint32_t hex_ = 0;
  int hex_digits_ = 0;
  uint32_t high_surrogate_ = 0;  // a \uD800-\uDBFF waiting for its low half
};

// Incremental scanner of one call object {"name": "...", <argument key>: <value>, ...} (any
// member order; other members are checked and dropped). The first "name" and the first
// argument member count, like a dict built from the pairs would keep one of them.
class CallObjectScanner {
 public:
  explicit CallObjectScanner(std::vector<std::string_view> argument_keys = {"arguments"});
  size_t feed(std::string_view in);  // bytes consumed; stops right after the closing brace
  bool done() const { return mode_ == Mode::kDone; }
  bool failed() const { return mode_ == Mode::kFailed; }
  const std::optional<std::string>& name() const { return name_; }
  bool has_arguments() const { return args_seen_; }
  // Normalized argument text produced since the previous call.
  std::string take_arguments();
  bool announced = false;  // the parser has sent this call's name

 private:
  enum class Mode : uint8_t { kOpen, kKey, kKeyText, kColon, kValue, kAfterValue, kDone, kFailed };
  enum class Member : uint8_t { kName, kArguments, kOther };

  bool step_punctuation(unsigned char c);
  void end_member();
  void fail() { mode_ = Mode::kFailed; }

  std::vector<std::string_view> argument_keys_;
  Mode mode_ = Mode::kOpen;
  Member member_ = Member::kOther;
  bool first_ = true;
  JsonNormalizer value_;
  std::optional<std::string> name_;
  bool args_seen_ = false;
  std::string args_;
};

// Streaming skeleton: buffers the text, builds the deltas, and implements the fallback rule
// shared by these formats: text from the first call marker on is held until a call is sent,
// and a malformed call before that point turns all of it back into content.
class ScanningToolParser : public ToolParser {
 public:
  explicit ScanningToolParser(ToolParserContext ctx) : ctx_(std::move(ctx)) {}
  ExtractedToolCalls extract(const std::string& text) override;
  ToolStreamDelta feed(std::string_view delta) override;
  ToolStreamDelta finish() override;

 protected:
  // Consumes the next piece of pending() it can decide (at_end: no more text will come);
  // false when nothing more can be decided now.
  virtual bool scan_step(bool at_end) = 0;
  // A parser of the same kind in its initial state (extract runs on it).
  virtual std::unique_ptr<ScanningToolParser> fresh() const = 0;
  // A call id when the context supplies none.
  virtual std::string fallback_id() const;

  const ToolParserContext& context() const { return ctx_; }
  std::string_view pending() const { return std::string_view(buf_).substr(pos_); }
  // Whether scanning should go on (false after a failure or once everything is content).
  bool active() const { return !passthrough_ && !dead_; }
  void consume(size_t n);
  // Consumes leading JSON whitespace; returns what is left pending.
  std::string_view skip_space();
  // Consumes pending() up to the first `marker` (left pending) and returns that text, with
  // whether the marker came; without it, a possible start of it stays pending unless at_end.
  std::pair<std::string_view, bool> consume_until(std::string_view marker, bool at_end);
  // Content up to the first `marker`; true once the marker is consumed as the calls' start.
  bool scan_content_until(std::string_view marker, bool at_end);
  // Raw argument text up to the first `marker`; true once the marker is consumed.
  bool scan_arguments_until(std::string_view marker, bool at_end);
  // Drops the rest of the reply (text after the calls); false, as a scan_step result.
  bool drop_rest();
  void emit_content(std::string_view s) { out_.content.append(s); }
  // The first call marker: the text consumed from here is held until a call is sent.
  void begin_calls() { holding_ = true; }
  void start_call(const std::string& name);
  void emit_arguments(std::string_view s);
  // A malformed call: extract() answers content only; the stream gives the held text back as
  // content when no call went out yet, and otherwise drops the rest of the reply. Returns false
  // (a scan_step result).
  bool fail();
  int calls_sent() const { return calls_; }

  enum class CallProgress : uint8_t { kNeedMore, kDone, kFailed };
  // Feeds `call` from pending(), sending its name, then its arguments, as they become known.
  // Done: the object ended with a name and arguments (`default_arguments` stands in for a
  // missing arguments member; null makes the member required). Failed: fail() was called.
  CallProgress scan_call_object(CallObjectScanner& call, bool at_end, const char* default_arguments);

 private:
  void scan(bool at_end);

  ToolParserContext ctx_;
  std::string buf_;
  size_t pos_ = 0;
  std::string held_;
  bool holding_ = false;
  bool failed_ = false;
  bool passthrough_ = false;
  bool dead_ = false;
  int calls_ = 0;
  ToolStreamDelta out_;
};

// ScanningToolParser with fresh() written once: Parser is the concrete class.
template <class Parser>
class ScanningToolParserFor : public ScanningToolParser {
 public:
  using ScanningToolParser::ScanningToolParser;

 protected:
  std::unique_ptr<ScanningToolParser> fresh() const override { return std::make_unique<Parser>(context()); }
};

}  // namespace tessera::server
