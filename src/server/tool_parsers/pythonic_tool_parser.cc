// Pythonic tool calls (Llama 3.2, Llama 4): the whole reply is a Python list of calls with
// keyword arguments, [get_weather(city="Paris"), f(x=1)], which Llama 4 may wrap in
// <|python_start|>...<|python_end|>. Anything else is plain content.
// A CallMachine (machine_tool_parser.h) whose units are a call's name, one keyword argument and
// a call's end. Argument text is json.dumps of the call's keyword dict, as in vLLM.
#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_parsers/machine_tool_parser.h"
#include "server/tool_parsers/parsers.h"
#include "server/tool_parsers/python_literal.h"
#include "server/tool_parsers/tool_parser_util.h"

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

enum class Stage { kLead, kCallName, kArgs, kAfterCall, kTail };

class PythonicMachine final : public CallMachine {
 public:
  using CallMachine::CallMachine;

 private:
  Step advance(bool at_end, ToolStreamDelta& out) override {
    switch (stage_) {
      case Stage::kLead: return lead(at_end);
      case Stage::kCallName: return call_name(at_end);
      case Stage::kArgs: return args(at_end, out);
      case Stage::kAfterCall: return after_call(at_end);
      case Stage::kTail: return tail(at_end);
    }
    return Step::kWait;
  }

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

  // `marker`, allowed once at pos_ (not at the text's end): nullopt when it is not there.
  std::optional<Step> once_marker(std::string_view marker, bool& seen, bool at_end) {
    if (seen) return std::nullopt;
    switch (match_marker(view().substr(pos_), marker)) {
      case MarkerMatch::kFull:
        seen = true;
        pos_ += marker.size();
        return Step::kMore;
      case MarkerMatch::kPartial: return short_text(at_end);
      case MarkerMatch::kNo: break;
    }
    return std::nullopt;
  }

  // Whitespace, then <|python_start|> at most once, then the list's '['.
  Step lead(bool at_end) {
    pos_ = skip_space(pos_);
    if (pos_ == buf_.size()) return short_text(at_end);
    if (const std::optional<Step> s = once_marker(kPythonStart, start_seen_, at_end)) return *s;
    if (buf_[pos_] != '[') return Step::kFail;
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
    pos_ = paren + 1;
    stage_ = Stage::kArgs;
    return Step::kMore;
  }

  // Sends the noted call unless it went out already (its arguments are then still open).
  void announce(ToolStreamDelta& out) {
    if (!open_) start_call(out, name_);
  }

  Step args(bool at_end, ToolStreamDelta& out) {
    if (skip_spacing() == buf_.size()) return short_text(at_end);
    if (buf_[pos_] == ')') {
      announce(out);
      close_call(out);
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
    announce(out);
    add_argument(out, arg.name, arg.json);
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
      if (at_end) done();
      return Step::kWait;
    }
    if (const std::optional<Step> s = once_marker(kPythonEnd, end_seen_, at_end)) return *s;
    return Step::kFail;
  }

  Stage stage_ = Stage::kLead;
  bool start_seen_ = false;
  bool end_seen_ = false;
  std::string name_;  // the call noted, not sent before its first argument or its end
  std::vector<std::string> arg_names_;
  ArgEndScanner scanner_;
};

}  // namespace

std::unique_ptr<ToolParser> make_pythonic_tool_parser(ToolParserContext ctx) {
  return make_machine_tool_parser<PythonicMachine>(std::move(ctx));
}

}  // namespace tessera::server
