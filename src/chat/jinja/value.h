// Values of the Jinja engine, with Python semantics: str/repr, truthiness, ==, ordering,
// dict keys. Containers are shared (copying a Value is cheap); only namespaces mutate, as in
// jinja2's ImmutableSandboxedEnvironment.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::jinja {

// A template error; line/col (1-based) are filled in by the interpreter at the innermost
// node that knows its position. Internal to the engine: the API returns Status.
class Error {
 public:
  explicit Error(std::string message, int line = 0, int col = 0)
      : message_(std::move(message)), line_(line), col_(col) {}
  const std::string& message() const { return message_; }
  int line() const { return line_; }
  int col() const { return col_; }
  void set_location(int line, int col) {
    if (line_ == 0) line_ = line, col_ = col;
  }

 private:
  std::string message_;
  int line_, col_;
};

enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction };

class Value;
class Runtime;
struct CallArgs;

// Values nest at most this deep, so that destroying or printing one cannot overflow the
// stack (a namespace attribute reassigned in a loop could otherwise nest without bound).
constexpr int kMaxValueDepth = 200;

struct List {
  std::vector<Value> items;
  bool is_tuple = false;
  // Results of map/select/items/...: jinja2 returns generators there, which are always
  // true, have no len() and are not JSON serializable. Templates that convert with |list
  // see a plain list.
  bool is_generator = false;
  int depth = 1;  // 1 + deepest element
};

class Dict;

using NativeFn = std::function<Value(Runtime&, CallArgs&)>;
struct Function {
  std::string name;
  NativeFn fn;
  bool is_macro = false;
};

class Value {
 public:
  Value() = default;  // undefined
  Value(bool b) : kind_(Kind::kBool), i_(b ? 1 : 0) {}  // NOLINT: implicit like Python
  Value(int v) : kind_(Kind::kInt), i_(v) {}            // NOLINT
  Value(int64_t v) : kind_(Kind::kInt), i_(v) {}        // NOLINT
  Value(double v) : kind_(Kind::kFloat), f_(v) {}       // NOLINT
  Value(std::string s);                                 // NOLINT
  Value(std::string_view s) : Value(std::string(s)) {}  // NOLINT
  Value(const char* s) : Value(std::string(s)) {}       // NOLINT

  // A string marked safe (jinja2's Markup, from |safe or |escape): `+` with a plain
  // string HTML-escapes the plain side, as markupsafe does.
  static Value markup(std::string s) {
    Value v(std::move(s));
    v.markup_ = true;
    return v;
  }
  // `s` with this value's Markup-ness (for str methods that keep Markup).
  Value same_markup(std::string s) const { return markup_ ? markup(std::move(s)) : Value(std::move(s)); }
  bool is_markup() const { return markup_; }

  static Value none() {
    Value v;
    v.kind_ = Kind::kNone;
    return v;
  }
  // An undefined value that remembers why it is undefined, for the error raised when it
  // is used strictly ("'x' is undefined", "'dict object' has no attribute 'y'").
  static Value undefined(std::string hint);
  static Value list(std::vector<Value> items, bool is_tuple = false);
  static Value generator(std::vector<Value> items);
  static Value dict(std::shared_ptr<Dict> d);
  static Value function(std::shared_ptr<Function> f);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_function() const { return kind_ == Kind::kFunction; }
  bool is_tuple() const { return is_list() && list().is_tuple; }
  bool is_generator() const { return is_list() && list().is_generator; }
  bool is_mapping() const;

  bool as_bool() const { return i_ != 0; }
  int64_t as_int() const { return i_; }  // int and bool
  double as_double() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(i_); }
  const std::string& str() const { return *static_cast<const std::string*>(ptr_.get()); }
  const List& list() const { return *static_cast<const List*>(ptr_.get()); }
  Dict& dict() const { return *static_cast<Dict*>(ptr_.get()); }
  const Function& function() const { return *static_cast<const Function*>(ptr_.get()); }
  std::shared_ptr<Dict> dict_ptr() const { return std::static_pointer_cast<Dict>(ptr_); }
  // The message to raise when an undefined value is used strictly.
  std::string undefined_message() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool markup_ = false;
  union {
    int64_t i_ = 0;
    double f_;
  };
  std::shared_ptr<void> ptr_;
};

// Insertion-ordered dict keyed by Python hash equality (1 == 1.0 == True).
class Dict {
 public:
  bool is_namespace = false;

  size_t size() const { return entries_.size(); }
  int depth() const { return depth_; }
  const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
  // nullptr when absent. Throws Error for unhashable keys.
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(const Value& key, Value value);
  void clear();

 private:
  std::vector<std::pair<Value, Value>> entries_;
  std::unordered_map<std::string, size_t> index_;  // hash_key -> entry
  int depth_ = 1;
};

inline bool Value::is_mapping() const { return is_dict() && !dict().is_namespace; }

struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};

// Binds arguments to a Python signature; throws Error on surplus or unknown arguments.
std::vector<std::optional<Value>> bind_args(const CallArgs& a,
                                            std::initializer_list<std::string_view> params,
                                            std::string_view fn_name);

// 0 for scalars, else 1 + the deepest element.
int value_depth(const Value& v);

// markupsafe.escape: & < > " ' become entities.
std::string html_escape(std::string_view s);

// Python's type name, as in error messages: 'str', 'int', 'dict', 'NoneType', ...
std::string type_name(const Value& v);
// str(v) appended to out / returned. Undefined prints as "".
void append_str(std::string& out, const Value& v);
std::string to_str(const Value& v);
std::string repr(const Value& v);
bool truthy(const Value& v);
bool equals(const Value& a, const Value& b);
// Python ordering: numbers, strings, lists/tuples; -1, 0, 1. Throws Error for other pairs
// (op names the operator in the message).
int compare(const Value& a, const Value& b, std::string_view op);
// The key under which dicts store v; throws Error for unhashable values.
std::string hash_key(const Value& v);
// len(v) for strings (code points), lists and dicts; nullopt otherwise.
std::optional<int64_t> length(const Value& v);

// Throws the undefined value's error.
[[noreturn]] void fail_undefined(const Value& v);

}  // namespace tessera::jinja
