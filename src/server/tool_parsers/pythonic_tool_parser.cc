// Pythonic tool calls (Llama 3.2, Llama 4): the whole reply is a Python list of calls with
// keyword arguments, [get_weather(city="Paris"), f(x=1)], which Llama 4 may wrap in
// <|python_start|>...<|python_end|>. Anything else is plain content.
//
// One resumable machine reads the reply a unit at a time (a call's name, one keyword argument,
// a call's end) and decides a unit only once the text shows how it ends, so a verdict never
// changes as text grows: streamed replies give exactly the calls and argument fragments of the
// whole-reply parse. Argument text is json.dumps of the call's keyword dict, as in vLLM.
#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_parsers/parsers.h"
#include "server/tool_parsers/python_literal.h"

namespace tessera::server {
namespace {

constexpr std::string_view kPythonStart = "<|python_start|>";
constexpr std::string_view kPythonEnd = "<|python_end|>";
// Longer names are no tool names (OpenAI allows 64 characters); the bound keeps rescans short.
constexpr size_t kMaxName = 1024;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_word(char c) { return is_alpha(c) || (c >= '0' && c <= '9') || c == '_'; }

// Python keywords can name neither a function nor a keyword argument.
bool is_python_keyword(std::string_view w) {
  static constexpr std::array<std::string_view, 35> kKeywords = {
      "False",  "None",   "True",    "and",      "as",       "assert", "async",  "await",  "break",
      "class",  "continue", "def",   "del",      "elif",     "else",   "except", "finally", "for",
      "from",   "global", "if",      "import",   "in",       "is",     "lambda", "nonlocal", "not",
      "or",     "pass",   "raise",   "return",   "try",      "while",  "with",   "yield"};
  return std::find(kKeywords.begin(), kKeywords.end(), w) != kKeywords.end();
}

std::string random_call_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return std::string("chatcmpl-tool-") + hex;
}

// Follows a keyword argument's text, without rescanning, to the first ',' or ')' outside
// brackets, strings and comments: the first place where the argument may be complete. Only
// the streaming path asks; it bounds how often the full (rescanning) parse runs.
class ArgEndScanner {
 public:
  explicit ArgEndScanner(size_t start = std::string_view::npos) : start_(start), pos_(start) {}

  // True when such a place exists at or past the scan point; the scan then rests on it.
  bool find(std::string_view s, size_t start) {
    if (start != start_) *this = ArgEndScanner(start);
    while (pos_ < s.size()) {
      const char c = s[pos_];
      if (comment_) {
        comment_ = c != '\n';
      } else if (quote_ != 0) {
        if (!string_step(s)) return false;
        continue;
      } else if (c == '\'' || c == '"') {
        if (pos_ + 2 >= s.size()) return false;  // a triple quote is not yet told apart
        quote_ = c;
        triple_ = s[pos_ + 1] == c && s[pos_ + 2] == c;
        pos_ += triple_ ? 3 : 1;
        continue;
      } else if (c == '#') {
        comment_ = true;
      } else if (c == '(' || c == '[' || c == '{') {
        ++depth_;
      } else if (c == ')' || c == ']' || c == '}' || c == ',') {
        if (depth_ == 0) return true;
        if (c != ',') --depth_;
      }
      ++pos_;
    }
    return false;
  }
  // The place found was not the argument's end after all: look further.
  void pass() { ++pos_; }

 private:
  bool string_step(std::string_view s) {
    const char c = s[pos_];
    if (c == '\\') {
      if (pos_ + 1 >= s.size()) return false;
      pos_ += 2;
    } else if (c != quote_) {
      ++pos_;
    } else if (!triple_) {
      quote_ = 0;
      ++pos_;
    } else {
      if (pos_ + 2 >= s.size()) return false;
      const bool closes = s[pos_ + 1] == quote_ && s[pos_ + 2] == quote_;
      pos_ += closes ? 3 : 1;
      if (closes) quote_ = 0;
    }
    return true;
  }

  size_t start_;
  size_t pos_;
  int depth_ = 0;
  char quote_ = 0;
  bool triple_ = false;
  bool comment_ = false;
};

struct KeywordArg {
  std::string name;
  std::string json;  // the value as json.dumps prints it
  size_t end = 0;    // past the argument and its ',' (a ')' is left for the caller)
};

enum class Stage { kLead, kCallName, kArgs, kAfterCall, kTail, kDone, kText };
enum class Step { kMore, kWait, kFail };

class PythonicMachine {
 public:
  explicit PythonicMachine(const std::function<std::string()>& make_id) : make_id_(make_id) {}

  // Reads more of the reply (`at_end`: there is no more) and adds what is decided to `out`.
  void run(std::string_view text, bool at_end, ToolStreamDelta& out) {
    if (stage_ == Stage::kText || stage_ == Stage::kDone) {
      if (stage_ == Stage::kText) out.content.append(text);
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

  bool succeeded() const { return stage_ == Stage::kDone && index_ >= 0; }

 private:
  Step advance(bool at_end, ToolStreamDelta& out) {
    switch (stage_) {
      case Stage::kLead: return lead(at_end);
      case Stage::kCallName: return call_name(at_end);
      case Stage::kArgs: return args(at_end, out);
      case Stage::kAfterCall: return after_call(at_end);
      case Stage::kTail: return tail(at_end);
      case Stage::kDone:
      case Stage::kText: break;
    }
    return Step::kWait;
  }

  static Step short_text(bool at_end) { return at_end ? Step::kFail : Step::kWait; }
  std::string_view view() const { return buf_; }

  size_t skip_space(size_t p) const {
    while (p < buf_.size() && is_space(buf_[p])) ++p;
    return p;
  }

  // Skips spacing and comments: returns where the next token starts (the text's end when it
  // ends first) and moves pos_ there, but not into a comment that may still go on.
  size_t skip_spacing() {
    const size_t p = skip_python_space(buf_, pos_);
    if (p < buf_.size()) {
      pos_ = p;
      return p;
    }
    const std::string_view skipped = view().substr(pos_);  // spacing and comments only
    const size_t hash = skipped.rfind('#');
    if (hash == std::string_view::npos || skipped.find('\n', hash) != std::string_view::npos) {
      pos_ = p;
    } else {
      pos_ += hash;
    }
    return p;
  }

  // Whitespace, then <|python_start|> at most once, then the list's '['.
  Step lead(bool at_end) {
    pos_ = skip_space(pos_);
    if (pos_ == buf_.size()) return short_text(at_end);
    const std::string_view rest = view().substr(pos_);
    if (!start_seen_ && rest.starts_with(kPythonStart)) {
      start_seen_ = true;
      pos_ += kPythonStart.size();
      return Step::kMore;
    }
    if (!start_seen_ && kPythonStart.starts_with(rest)) return short_text(at_end);
    if (rest[0] != '[') return Step::kFail;
    ++pos_;
    stage_ = Stage::kCallName;
    return Step::kMore;
  }

  // NAME '(' : the call is noted, and sent with its first argument or its end (as vLLM sends
  // a call once its arguments parse), so a name followed by nonsense never goes out.
  Step call_name(bool at_end) {
    if (skip_spacing() == buf_.size()) return short_text(at_end);
    size_t e = pos_;
    while (e < buf_.size() && e - pos_ <= kMaxName && is_word(buf_[e])) ++e;
    if (e - pos_ > kMaxName) return Step::kFail;
    if (e == buf_.size()) return short_text(at_end);
    const std::string_view name = view().substr(pos_, e - pos_);
    // vLLM's pattern wants a letter first; '[]' is no call list either.
    if (name.empty() || !is_alpha(name[0]) || is_python_keyword(name)) return Step::kFail;
    const size_t paren = skip_python_space(buf_, e);
    if (paren == buf_.size()) return short_text(at_end);
    if (buf_[paren] != '(') return Step::kFail;
    name_.assign(name);
    arg_names_.clear();
    sent_ = false;
    pos_ = paren + 1;
    stage_ = Stage::kArgs;
    return Step::kMore;
  }

  Step args(bool at_end, ToolStreamDelta& out) {
    if (skip_spacing() == buf_.size()) return short_text(at_end);
    if (buf_[pos_] == ')') {
      emit(out, sent_ ? "}" : "{}");
      open_ = false;
      content_from_ = ++pos_;
      stage_ = Stage::kAfterCall;
      return Step::kMore;
    }
    if (!at_end && !scanner_.find(buf_, pos_)) return Step::kWait;
    KeywordArg arg;
    switch (keyword_arg(at_end, arg)) {
      case LiteralStatus::kOk: break;
      case LiteralStatus::kIncomplete: scanner_.pass(); return Step::kMore;
      case LiteralStatus::kInvalid: return Step::kFail;
    }
    // Python refuses a repeated keyword; the dict would not hold both either.
    if (std::find(arg_names_.begin(), arg_names_.end(), arg.name) != arg_names_.end()) return Step::kFail;
    std::string fragment = arg_names_.empty() ? "{" : ", ";
    fragment += python_json_string(arg.name) + ": " + arg.json;
    emit(out, fragment);
    arg_names_.push_back(std::move(arg.name));
    content_from_ = pos_ = arg.end;
    return Step::kMore;
  }

  // NAME '=' LITERAL followed by ',' or ')'.
  LiteralStatus keyword_arg(bool at_end, KeywordArg& arg) const {
    const auto short_status = at_end ? LiteralStatus::kInvalid : LiteralStatus::kIncomplete;
    size_t e = pos_;
    while (e < buf_.size() && is_word(buf_[e])) ++e;
    if (e == buf_.size()) return short_status;
    arg.name.assign(view().substr(pos_, e - pos_));
    if (arg.name.empty() || !(is_alpha(arg.name[0]) || arg.name[0] == '_') || is_python_keyword(arg.name)) {
      return LiteralStatus::kInvalid;
    }
    size_t p = skip_python_space(buf_, e);
    if (p == buf_.size()) return short_status;
    if (buf_[p] != '=') return LiteralStatus::kInvalid;
    ++p;
    PyValue value;
    const LiteralStatus status = parse_python_literal(buf_, p, at_end, value);
    if (status != LiteralStatus::kOk) return status;
    p = skip_python_space(buf_, p);
    if (p == buf_.size()) return short_status;
    if (buf_[p] != ',' && buf_[p] != ')') return LiteralStatus::kInvalid;
    arg.json = python_json_dumps(value);
    arg.end = buf_[p] == ',' ? p + 1 : p;
    return LiteralStatus::kOk;
  }

  // After a call: ',' and the next call, or the list's ']'. vLLM's pattern refuses "[f(),]".
  Step after_call(bool at_end) {
    if (skip_spacing() == buf_.size()) return short_text(at_end);
    const char c = buf_[pos_];
    if (c != ',' && c != ']') return Step::kFail;
    content_from_ = ++pos_;
    stage_ = c == ',' ? Stage::kCallName : Stage::kTail;
    return Step::kMore;
  }

  // Only whitespace and <|python_end|> may follow the list.
  Step tail(bool at_end) {
    pos_ = skip_space(pos_);
    if (pos_ == buf_.size()) {
      if (at_end) stage_ = Stage::kDone;
      return Step::kWait;
    }
    const std::string_view rest = view().substr(pos_);
    if (!end_seen_ && rest.starts_with(kPythonEnd)) {
      end_seen_ = true;
      pos_ += kPythonEnd.size();
      return Step::kMore;
    }
    if (!end_seen_ && kPythonEnd.starts_with(rest)) return short_text(at_end);
    return Step::kFail;
  }

  // Argument text for the current call; its first fragment also sends index, id and name.
  void emit(ToolStreamDelta& out, std::string_view fragment) {
    if (!sent_) {
      sent_ = open_ = true;
      ToolCallDelta d;
      d.index = ++index_;
      d.id = make_id_ ? make_id_() : random_call_id();
      d.name = name_;
      d.arguments.assign(fragment);
      out.tool_calls.push_back(std::move(d));
      return;
    }
    if (out.tool_calls.empty() || out.tool_calls.back().index != index_) {
      out.tool_calls.push_back(ToolCallDelta{index_, std::nullopt, std::nullopt, {}});
    }
    out.tool_calls.back().arguments.append(fragment);
  }

  // Not a call list after all. Before any call went out, everything held is content. After,
  // a call cut short by the reply's end gets its closing brace (its rest is dropped: the
  // arguments sent stay valid JSON); text that breaks the list mid-reply is content from
  // where the last whole unit ended.
  void fail(bool at_end, ToolStreamDelta& out) {
    if (index_ < 0) {
      out.content.append(buf_);
    } else if (open_) {
      emit(out, "}");
      open_ = false;
      if (!at_end) out.content.append(view().substr(content_from_));
    } else {
      out.content.append(view().substr(content_from_));
    }
    stage_ = Stage::kText;
    buf_.clear();
  }

  const std::function<std::string()>& make_id_;
  std::string buf_;  // the reply so far (while it may still be a call list)
  size_t pos_ = 0;   // first byte not yet decided
  size_t content_from_ = 0;
  Stage stage_ = Stage::kLead;
  bool start_seen_ = false;
  bool end_seen_ = false;
  int index_ = -1;     // the last call sent
  bool sent_ = false;  // the current call went out
  bool open_ = false;  // ... and its ')' has not come yet
  std::string name_;
  std::vector<std::string> arg_names_;
  ArgEndScanner scanner_;
};

// Calls of a whole-reply run: each call's fragments joined.
std::vector<ToolCall> join_calls(const std::vector<ToolCallDelta>& deltas) {
  std::vector<ToolCall> calls;
  for (const ToolCallDelta& d : deltas) {
    if (d.id) calls.push_back(ToolCall{*d.id, d.name.value_or(""), ""});
    if (!calls.empty()) calls.back().arguments += d.arguments;
  }
  return calls;
}

class PythonicToolParser final : public ToolParser {
 public:
  explicit PythonicToolParser(ToolParserContext ctx) : ctx_(std::move(ctx)), stream_(ctx_.make_id) {}
  PythonicToolParser(const PythonicToolParser&) = delete;  // stream_ refers to ctx_
  PythonicToolParser& operator=(const PythonicToolParser&) = delete;

  ExtractedToolCalls extract(const std::string& text) override {
    ExtractedToolCalls result;
    result.content = text;
    try {
      PythonicMachine whole(ctx_.make_id);
      ToolStreamDelta out;
      whole.run(text, /*at_end=*/true, out);
      if (!whole.succeeded()) return result;
      result.tools_called = true;
      result.tool_calls = join_calls(out.tool_calls);
      result.content.reset();
    } catch (...) {  // e.g. bad_alloc on absurd input: the reply stays plain text
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
      stream_.run(delta, at_end, out);
    } catch (...) {
      broken_ = true;
      out = ToolStreamDelta{};
      out.content.assign(delta);
    }
    return out;
  }

  ToolParserContext ctx_;
  PythonicMachine stream_;
  bool broken_ = false;
};

}  // namespace

std::unique_ptr<ToolParser> make_pythonic_tool_parser(ToolParserContext ctx) {
  return std::make_unique<PythonicToolParser>(std::move(ctx));
}

}  // namespace tessera::server
