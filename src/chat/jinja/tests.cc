// jinja2's builtin tests (`x is defined`, `n is divisibleby 3`, ...).
#include <unordered_map>

#include "chat/jinja/builtins.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/text.h"

namespace tessera::jinja {
namespace {

const Value& arg(const CallArgs& a, const char* test) {
  if (a.args.empty()) {
    if (!a.kwargs.empty()) return a.kwargs[0].second;
    throw Error(std::string("test '") + test + "' needs an argument");
  }
  return a.args[0];
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
  return equals(binary_op(rt, "%", v, arg(a, "divisibleby")), Value(0));
}

bool t_eq(Runtime&, const Value& v, const CallArgs& a) { return equals(v, arg(a, "eq")); }
bool t_ne(Runtime&, const Value& v, const CallArgs& a) { return !equals(v, arg(a, "ne")); }
bool t_lt(Runtime&, const Value& v, const CallArgs& a) { return compare(v, arg(a, "lt"), "<") < 0; }
bool t_le(Runtime&, const Value& v, const CallArgs& a) { return compare(v, arg(a, "le"), "<=") <= 0; }
bool t_gt(Runtime&, const Value& v, const CallArgs& a) { return compare(v, arg(a, "gt"), ">") > 0; }
bool t_ge(Runtime&, const Value& v, const CallArgs& a) { return compare(v, arg(a, "ge"), ">=") >= 0; }
bool t_in(Runtime&, const Value& v, const CallArgs& a) { return contains(arg(a, "in"), v); }

// Python's `is`: identity for containers, value identity for the immutable scalars that
// CPython shares (None, booleans, and equal numbers/strings in practice).
bool t_sameas(Runtime&, const Value& v, const CallArgs& a) {
  const Value& o = arg(a, "sameas");
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
      {"boolean", t_boolean},   {"callable", t_callable}, {"defined", t_defined},
      {"divisibleby", t_divisibleby}, {"eq", t_eq},       {"equalto", t_eq},
      {"==", t_eq},             {"escaped", t_escaped},   {"even", t_even},
      {"false", t_false},       {"filter", t_filter},     {"float", t_float},
      {"ge", t_ge},             {">=", t_ge},             {"gt", t_gt},
      {"greaterthan", t_gt},    {">", t_gt},              {"in", t_in},
      {"integer", t_integer},   {"iterable", t_iterable}, {"le", t_le},
      {"<=", t_le},             {"lower", t_lower},       {"lt", t_lt},
      {"lessthan", t_lt},       {"<", t_lt},              {"mapping", t_mapping},
      {"ne", t_ne},             {"!=", t_ne},             {"none", t_none},
      {"number", t_number},     {"odd", t_odd},           {"sameas", t_sameas},
      {"sequence", t_sequence}, {"string", t_string},     {"test", t_test},
      {"true", t_true},         {"undefined", t_undefined}, {"upper", t_upper},
  };
  auto it = kTable.find(name);
  return it == kTable.end() ? nullptr : it->second;
}

}  // namespace tessera::jinja
