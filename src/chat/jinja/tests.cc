// jinja2's builtin tests (`x is defined`, `n is divisibleby 3`, ...).
#include <optional>
#include <unordered_map>

#include "chat/jinja/builtins.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/text.h"

namespace tessera::jinja {
namespace {

// The argument of a two-parameter test: jinja2's test_x(value, param), or for the
// comparison tests (param null) a Python operator function, which takes no keywords.
Value arg(const CallArgs& a, const char* test, const char* param = nullptr) {
  std::optional<Value> v;
  if (param != nullptr) {
    v = bind_args(a, {param}, test)[0];
  } else {
    if (!a.kwargs.empty()) throw Error(std::string(test) + "() takes no keyword arguments");
    if (a.args.size() > 1) throw Error(std::string(test) + "() takes 1 argument (" + std::to_string(a.args.size()) + " given)");
    if (!a.args.empty()) v = a.args[0];
  }
  if (!v) throw Error(std::string("test '") + test + "' needs an argument");
  return *v;
}

// jinja2's one-parameter tests (test_x(value)) take no arguments.
template <TestFn F>
bool no_args(Runtime& rt, const Value& v, const CallArgs& a) {
  if (!a.args.empty() || !a.kwargs.empty()) throw Error("this test takes no arguments");
  return F(rt, v, a);
}

bool t_defined(Runtime&, const Value& v, const CallArgs&) { return !v.is_undefined(); }
bool t_undefined(Runtime&, const Value& v, const CallArgs&) { return v.is_undefined(); }
bool t_none(Runtime&, const Value& v, const CallArgs&) { return v.is_none(); }
bool t_boolean(Runtime&, const Value& v, const CallArgs&) { return v.is_bool(); }
bool t_true(Runtime&, const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }
bool t_false(Runtime&, const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool t_integer(Runtime&, const Value& v, const CallArgs&) { return v.is_int(); }
bool t_float(Runtime&, const Value& v, const CallArgs&) { return v.is_float(); }
bool t_number(Runtime&, const Value& v, const CallArgs&) { return v.is_number(); }
bool t_string(Runtime&, const Value& v, const CallArgs&) { return v.is_string(); }
bool t_mapping(Runtime&, const Value& v, const CallArgs&) { return v.is_mapping(); }
bool t_escaped(Runtime&, const Value&, const CallArgs&) { return false; }
// Undefined is callable in Python (calling it raises).
bool t_callable(Runtime&, const Value& v, const CallArgs&) { return v.is_function() || v.is_undefined(); }

bool t_iterable(Runtime&, const Value& v, const CallArgs&) {
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_mapping();
}

bool t_sequence(Runtime&, const Value& v, const CallArgs&) {
  return v.is_undefined() || v.is_string() || (v.is_list() && !v.is_generator()) || v.is_mapping();
}

bool t_odd(Runtime& rt, const Value& v, const CallArgs&) {
  return equals(binary_op(rt, "%", v, Value(2)), Value(1));
}
bool t_even(Runtime& rt, const Value& v, const CallArgs&) {
  return equals(binary_op(rt, "%", v, Value(2)), Value(0));
}
bool t_divisibleby(Runtime& rt, const Value& v, const CallArgs& a) {
  return equals(binary_op(rt, "%", v, arg(a, "divisibleby", "num")), Value(0));
}

bool t_eq(Runtime&, const Value& v, const CallArgs& a) { return equals(v, arg(a, "eq")); }
bool t_ne(Runtime&, const Value& v, const CallArgs& a) { return !equals(v, arg(a, "ne")); }
bool t_lt(Runtime&, const Value& v, const CallArgs& a) { return compare(v, arg(a, "lt"), "<") < 0; }
bool t_le(Runtime&, const Value& v, const CallArgs& a) { return compare(v, arg(a, "le"), "<=") <= 0; }
bool t_gt(Runtime&, const Value& v, const CallArgs& a) { return compare(v, arg(a, "gt"), ">") > 0; }
bool t_ge(Runtime&, const Value& v, const CallArgs& a) { return compare(v, arg(a, "ge"), ">=") >= 0; }
bool t_in(Runtime&, const Value& v, const CallArgs& a) { return contains(arg(a, "in", "seq"), v); }

// Python's `is`: identity for containers, value identity for the immutable scalars that
// CPython shares (None, booleans, and equal numbers/strings in practice).
bool t_sameas(Runtime&, const Value& v, const CallArgs& a) {
  const Value o = arg(a, "sameas", "other");
  if (v.kind() != o.kind()) return false;
  switch (v.kind()) {
    case Kind::kList: return &v.list() == &o.list();
    case Kind::kDict: return &v.dict() == &o.dict();
    case Kind::kFunction: return &v.function() == &o.function();
    default: return equals(v, o);
  }
}

bool t_lower(Runtime&, const Value& v, const CallArgs&) {
  const std::string s = to_str(v);
  bool cased = false;
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    i = utf8_next(s, i, &c);
    if (is_py_upper(c)) return false;
    cased = cased || is_py_lower(c);
  }
  return cased;
}

bool t_upper(Runtime&, const Value& v, const CallArgs&) {
  const std::string s = to_str(v);
  bool cased = false;
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    i = utf8_next(s, i, &c);
    if (is_py_lower(c)) return false;
    cased = cased || is_py_upper(c);
  }
  return cased;
}

bool t_filter(Runtime&, const Value& v, const CallArgs&) { return v.is_string() && find_filter(v.str()) != nullptr; }
bool t_test(Runtime&, const Value& v, const CallArgs&) { return v.is_string() && find_test(v.str()) != nullptr; }

}  // namespace

TestFn find_test(std::string_view name) {
  static const std::unordered_map<std::string_view, TestFn> kTable = {
      {"boolean", no_args<t_boolean>},   {"callable", no_args<t_callable>}, {"defined", no_args<t_defined>},
      {"divisibleby", t_divisibleby},    {"eq", t_eq},                      {"equalto", t_eq},
      {"==", t_eq},                      {"escaped", no_args<t_escaped>},   {"even", no_args<t_even>},
      {"false", no_args<t_false>},       {"filter", no_args<t_filter>},     {"float", no_args<t_float>},
      {"ge", t_ge},                      {">=", t_ge},                      {"gt", t_gt},
      {"greaterthan", t_gt},             {">", t_gt},                       {"in", t_in},
      {"integer", no_args<t_integer>},   {"iterable", no_args<t_iterable>}, {"le", t_le},
      {"<=", t_le},                      {"lower", no_args<t_lower>},       {"lt", t_lt},
      {"lessthan", t_lt},                {"<", t_lt},                       {"mapping", no_args<t_mapping>},
      {"ne", t_ne},                      {"!=", t_ne},                      {"none", no_args<t_none>},
      {"number", no_args<t_number>},     {"odd", no_args<t_odd>},           {"sameas", t_sameas},
      {"sequence", no_args<t_sequence>}, {"string", no_args<t_string>},     {"test", no_args<t_test>},
      {"true", no_args<t_true>},         {"undefined", no_args<t_undefined>}, {"upper", no_args<t_upper>},
  };
  auto it = kTable.find(name);
  return it == kTable.end() ? nullptr : it->second;
}

}  // namespace tessera::jinja
