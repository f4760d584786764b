// jinja2's builtin filters (jinja2/filters.py semantics), plus HF's tojson.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "chat/jinja/builtins.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/text.h"

namespace tessera::jinja {
namespace {

using Args = std::vector<std::optional<Value>>;

Value arg_or(const Args& a, size_t i, Value dflt) { return a[i] ? *a[i] : std::move(dflt); }

int64_t int_arg(const Args& a, size_t i, int64_t dflt, const char* what) {
  if (!a[i] || a[i]->is_none()) return dflt;
  if (a[i]->is_int() || a[i]->is_bool()) return a[i]->as_int();
  if (a[i]->is_float()) return static_cast<int64_t>(a[i]->as_double());
  throw Error(std::string(what) + " must be an integer, not " + type_name(*a[i]));
}

std::string str_arg(const Args& a, size_t i, const std::string& dflt) {
  return a[i] ? to_str(*a[i]) : dflt;
}

// A string result; `like` passes on jinja2's Markup-ness for filters whose str methods
// keep it (trim, upper, lower, capitalize, center, indent).
Value result_str(Runtime& rt, std::string s, const Value& like = Value()) {
  rt.check_string_size(s.size());
  rt.charge(s.size() / 8);
  return like.same_markup(std::move(s));
}

// jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0, with getitem.
Value get_path(Runtime& rt, const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    int64_t idx;
    if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        parse_py_int(part, 10, &idx)) {
      v = rt.getitem(v, Value(idx));
    } else {
      v = rt.getitem(v, Value(part));
    }
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

// Sort key of jinja2's ignore_case: strings compare lower-cased.
Value fold_case(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(py_lower(v.str()));
  return v;
}

std::vector<Value> items_of(Runtime& rt, const Value& v) { return iterate(rt, v); }

Value f_abs(Runtime&, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "abs");
  if (v.is_float()) return Value(std::fabs(v.as_double()));
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == INT64_MIN) throw Error("integer overflow");
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  throw Error("bad operand type for abs(): '" + type_name(v) + "'");
}

Value f_attr(Runtime& rt, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"name"}, "attr");
  if (!b[0]) throw Error("attr() missing required argument 'name'");
  // Python attributes only (methods, namespace attributes), never dict items.
  const std::string name = to_str(*b[0]);
  if (v.is_dict() && v.dict().is_namespace) return rt.getattr(v, name);
  if (auto m = get_method(v, name)) return *m;
  return Value::undefined("'" + type_name(v) + " object' has no attribute '" + name + "'");
}

Value f_batch(Runtime& rt, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"linecount", "fill_with"}, "batch");
  const int64_t n = int_arg(b, 0, 0, "linecount");
  if (n <= 0) throw Error("batch linecount must be positive");
  std::vector<Value> out, cur;
  for (const Value& item : items_of(rt, v)) {
    cur.push_back(item);
    if (static_cast<int64_t>(cur.size()) == n) out.push_back(Value::list(std::move(cur))), cur.clear();
  }
  if (!cur.empty()) {
    if (b[1] && !b[1]->is_none()) {
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(*b[1]);
    }
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::generator(std::move(out));
}

Value f_capitalize(Runtime& rt, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "capitalize");
  return result_str(rt, py_capitalize(to_str(v)), v);
}

Value f_center(Runtime& rt, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"width"}, "center");
  const int64_t width = int_arg(b, 0, 80, "width");
  rt.check_string_size(static_cast<size_t>(std::max<int64_t>(width, 0)));
  return result_str(rt, py_center(to_str(v), width, " "), v);
}

Value f_length(Runtime&, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "length");
  auto n = length(v);
  if (!n) throw Error("object of type '" + type_name(v) + "' has no len()");
  return Value(*n);
}

Value f_default(Runtime&, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"default_value", "boolean"}, "default");
  const bool boolean = b[1] && truthy(*b[1]);
  if (v.is_undefined() || (boolean && !truthy(v))) return arg_or(b, 0, Value(""));
  return v;
}

Value f_dictsort(Runtime& rt, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"case_sensitive", "by", "reverse"}, "dictsort");
  if (!v.is_mapping()) throw Error("dictsort requires a mapping");
  const bool cs = b[0] && truthy(*b[0]);
  const std::string by = str_arg(b, 1, "key");
  if (by != "key" && by != "value") throw Error("You can only sort by either \"key\" or \"value\"");
  const int pos = by == "key" ? 0 : 1;
  std::vector<Value> items;
  for (const auto& [k, val] : v.dict().entries()) items.push_back(Value::list({k, val}, true));
  rt.charge(items.size() * 8);
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return compare(fold_case(x.list().items[pos], cs), fold_case(y.list().items[pos], cs), "<") < 0;
  });
  if (b[2] && truthy(*b[2])) std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_escape(Runtime& rt, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "escape");
  if (v.is_markup()) return v;
  std::string out = html_escape(to_str(v));
  rt.check_string_size(out.size());
  return Value::markup(std::move(out));
}

Value f_forceescape(Runtime& rt, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "forceescape");
  std::string out = html_escape(to_str(v));
  rt.check_string_size(out.size());
  return Value::markup(std::move(out));
}

Value f_first(Runtime& rt, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "first");
  std::vector<Value> items = items_of(rt, v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Runtime& rt, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "last");
  if (v.is_generator()) throw Error("'generator' object is not reversible");
  std::vector<Value> items = items_of(rt, v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value f_float(Runtime&, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"default"}, "float");
  double d;
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string() && parse_py_float(v.str(), &d)) return Value(d);
  return arg_or(b, 0, Value(0.0));
}

Value f_int(Runtime&, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"default", "base"}, "int");
  const int64_t base = int_arg(b, 1, 10, "base");
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  double d;
  if (v.is_float()) {
    d = v.as_double();
  } else if (v.is_string()) {
    int64_t i;
    if (base >= 2 && base <= 36 && parse_py_int(v.str(), static_cast<int>(base), &i)) return Value(i);
    if (!parse_py_float(v.str(), &d)) return arg_or(b, 0, Value(0));
  } else {
    return arg_or(b, 0, Value(0));
  }
  if (std::isnan(d)) return arg_or(b, 0, Value(0));
  if (std::isinf(d) || std::fabs(d) >= 9.2e18) throw Error("cannot convert float infinity to integer");
  return Value(static_cast<int64_t>(d));
}

Value f_format(Runtime& rt, const Value& v, const CallArgs& a) {
  if (!a.kwargs.empty() && !a.args.empty()) throw Error("can't handle positional and keyword arguments at the same time");
  if (!a.kwargs.empty()) throw Error("format with keyword arguments is not supported");
  Value args = a.args.size() == 1 ? a.args[0] : Value::list(a.args, true);
  if (a.args.size() == 1 && a.args[0].is_tuple()) args = Value::list({a.args[0]}, true);
  return result_str(rt, percent_format(rt, to_str(v), args));
}

Value f_indent(Runtime& rt, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"width", "first", "blank"}, "indent");
  std::string ind;
  if (b[0] && b[0]->is_string()) {
    ind = b[0]->str();
  } else {
    const int64_t w = int_arg(b, 0, 4, "width");
    rt.check_string_size(static_cast<size_t>(std::max<int64_t>(w, 0)));
    ind.assign(static_cast<size_t>(std::max<int64_t>(w, 0)), ' ');
  }
  const bool first = b[1] && truthy(*b[1]);
  const bool blank = b[2] && truthy(*b[2]);
  std::string s = to_str(v) + "\n";  // jinja2's quirk so that splitlines keeps a last empty line
  std::vector<std::string> lines = py_splitlines(s, false);
  rt.charge(lines.size() * (ind.size() / 8 + 1));
  std::string out;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) out += "\n" + ind;
      out += lines[i];
      rt.check_string_size(out.size());
    }
  } else {
    if (!lines.empty()) out = lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      out += '\n';
      if (!lines[i].empty()) out += ind;
      out += lines[i];
      rt.check_string_size(out.size());
    }
  }
  if (first) out = ind + out;
  return result_str(rt, std::move(out), v);
}

Value f_items(Runtime& rt, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "items");
  if (v.is_undefined()) return Value::generator({});
  if (!v.is_mapping()) throw Error("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  rt.charge(v.dict().size() * 4);
  for (const auto& [k, val] : v.dict().entries()) out.push_back(Value::list({k, val}, true));
  return Value::generator(std::move(out));
}

Value f_join(Runtime& rt, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"d", "attribute"}, "join");
  const std::string sep = str_arg(b, 0, "");
  std::string out;
  bool first = true;
  for (const Value& item : items_of(rt, v)) {
    if (!first) out += sep;
    first = false;
    append_str(out, b[1] && !b[1]->is_none() ? get_path(rt, item, to_str(*b[1])) : item);
    rt.check_string_size(out.size());
  }
  return result_str(rt, std::move(out));
}

Value f_list(Runtime& rt, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "list");
  return Value::list(items_of(rt, v));
}

Value f_lower(Runtime& rt, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "lower");
  return result_str(rt, py_lower(to_str(v)), v);
}

Value f_upper(Runtime& rt, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "upper");
  return result_str(rt, py_upper(to_str(v)), v);
}

// jinja2's title filter: words start after whitespace, '-', and opening brackets.
Value f_title(Runtime& rt, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "title");
  const std::string s = to_str(v);
  std::string out;
  bool word_start = true;
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_next(s, i, &c);
    const bool sep = is_py_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      out += s.substr(i, n - i);
      word_start = true;
    } else {
      out += word_start ? py_upper(s.substr(i, n - i)) : py_lower(s.substr(i, n - i));
      word_start = false;
    }
    i = n;
  }
  return result_str(rt, std::move(out));
}

Value f_map(Runtime& rt, const Value& v, const CallArgs& a) {
  std::vector<Value> out;
  if (!truthy(v)) return Value::generator({});  // jinja2: `if value:` before anything
  std::vector<Value> items = items_of(rt, v);
  if (a.args.empty()) {
    Args b = bind_args(a, {"attribute", "default"}, "map");
    if (!b[0]) throw Error("map requires a filter name or attribute=");
    const std::string path = to_str(*b[0]);
    for (const Value& item : items) {
      Value x = get_path(rt, item, path);
      if (x.is_undefined() && b[1]) x = *b[1];
      out.push_back(std::move(x));
    }
    return Value::generator(std::move(out));
  }
  if (!a.args[0].is_string()) throw Error("map filter name must be a string");
  FilterFn f = find_filter(a.args[0].str());
  if (f == nullptr) throw Error("No filter named '" + a.args[0].str() + "'.");
  CallArgs rest;
  rest.args.assign(a.args.begin() + 1, a.args.end());
  rest.kwargs = a.kwargs;
  for (const Value& item : items) out.push_back(f(rt, item, rest));
  return Value::generator(std::move(out));
}

Value min_max(Runtime& rt, const Value& v, const CallArgs& a, bool want_max) {
  Args b = bind_args(a, {"case_sensitive", "attribute"}, want_max ? "max" : "min");
  const bool cs = b[0] && truthy(*b[0]);
  std::vector<Value> items = items_of(rt, v);
  if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
  auto key = [&](const Value& x) {
    return fold_case(b[1] && !b[1]->is_none() ? get_path(rt, x, to_str(*b[1])) : x, cs);
  };
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    const int c = compare(k, best_key, want_max ? ">" : "<");
    if (want_max ? c > 0 : c < 0) best = i, best_key = std::move(k);
  }
  return items[best];
}

Value f_max(Runtime& rt, const Value& v, const CallArgs& a) { return min_max(rt, v, a, true); }
Value f_min(Runtime& rt, const Value& v, const CallArgs& a) { return min_max(rt, v, a, false); }

// select/reject/selectattr/rejectattr share this: keep items whose test result (or
// truthiness without a test) equals `keep`.
Value select_impl(Runtime& rt, const Value& v, const CallArgs& a, bool keep, bool by_attr) {
  if (!truthy(v)) return Value::generator({});  // jinja2: `if value:` before anything
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    if (a.args.empty()) throw Error("selectattr/rejectattr need an attribute name");
    attr = to_str(a.args[next++]);
  }
  TestFn test = nullptr;
  CallArgs rest;
  if (next < a.args.size()) {
    if (!a.args[next].is_string()) throw Error("test name must be a string");
    test = find_test(a.args[next].str());
    if (test == nullptr) throw Error("No test named '" + a.args[next].str() + "'.");
    rest.args.assign(a.args.begin() + next + 1, a.args.end());
    rest.kwargs = a.kwargs;
  }
  std::vector<Value> out;
  for (const Value& item : items_of(rt, v)) {
    const Value x = by_attr ? get_path(rt, item, attr) : item;
    const bool r = test ? test(rt, x, rest) : truthy(x);
    if (r == keep) out.push_back(item);
  }
  return Value::generator(std::move(out));
}

Value f_select(Runtime& rt, const Value& v, const CallArgs& a) { return select_impl(rt, v, a, true, false); }
Value f_reject(Runtime& rt, const Value& v, const CallArgs& a) { return select_impl(rt, v, a, false, false); }
Value f_selectattr(Runtime& rt, const Value& v, const CallArgs& a) { return select_impl(rt, v, a, true, true); }
Value f_rejectattr(Runtime& rt, const Value& v, const CallArgs& a) { return select_impl(rt, v, a, false, true); }

Value f_replace(Runtime& rt, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"old", "new", "count"}, "replace");
  if (!b[0] || !b[1]) throw Error("replace() needs old and new");
  const std::string s = to_str(v), old = to_str(*b[0]), repl = to_str(*b[1]);
  const int64_t count = int_arg(b, 2, -1, "count");
  const int64_t hits = py_count(s, old);
  const int64_t done = count < 0 ? hits : std::min(count, hits);
  rt.check_string_size(s.size() + static_cast<size_t>(done) * repl.size());
  return result_str(rt, py_replace(s, old, repl, count));
}

Value f_reverse(Runtime& rt, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "reverse");
  if (v.is_string()) {
    std::vector<size_t> offs = code_point_offsets(v.str());
    std::string out;
    for (size_t i = offs.size() - 1; i > 0; --i) out += v.str().substr(offs[i - 1], offs[i] - offs[i - 1]);
    return Value(std::move(out));
  }
  std::vector<Value> items = items_of(rt, v);
  std::reverse(items.begin(), items.end());
  return Value::generator(std::move(items));
}

Value f_round(Runtime&, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"precision", "method"}, "round");
  const int64_t precision = std::clamp<int64_t>(int_arg(b, 0, 0, "precision"), -400, 400);
  const std::string method = b[1] ? to_str(*b[1]) : "common";
  if (method != "common" && method != "ceil" && method != "floor") {
    throw Error("method must be common, ceil or floor");
  }
  if (!v.is_number()) throw Error("type " + type_name(v) + " doesn't define __round__ method");
  if (method == "common") {
    if (!v.is_float()) return Value(v.as_int());  // round(int, n) stays an int
    const double x = v.as_double();
    if (!std::isfinite(x) || precision > 300) return Value(x);
    // Python rounds the exact binary value half-to-even; printf does the same.
    char buf[512];
    if (precision >= 0) {
      std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), x);
      return Value(std::strtod(buf, nullptr));
    }
    const double p = std::pow(10.0, static_cast<double>(-precision));
    return Value(std::nearbyint(x / p) * p);
  }
  const double p = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_double() * p;
  return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / p);
}

Value f_safe(Runtime&, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "safe");
  return v.is_markup() ? v : Value::markup(to_str(v));
}

Value f_slice(Runtime& rt, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"slices", "fill_with"}, "slice");
  const int64_t slices = int_arg(b, 0, 0, "slices");
  if (slices <= 0 || slices > 100000) throw Error("slice count must be positive");
  std::vector<Value> seq = items_of(rt, v);
  const int64_t n = static_cast<int64_t>(seq.size());
  const int64_t per = n / slices, extra = n % slices;
  int64_t offset = 0;
  std::vector<Value> out;
  for (int64_t k = 0; k < slices; ++k) {
    const int64_t start = offset + k * per;
    if (k < extra) ++offset;
    const int64_t end = offset + (k + 1) * per;
    std::vector<Value> part(seq.begin() + start, seq.begin() + end);
    if (b[1] && !b[1]->is_none() && k >= extra) part.push_back(*b[1]);
    out.push_back(Value::list(std::move(part)));
  }
  return Value::generator(std::move(out));
}

Value f_sort(Runtime& rt, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"reverse", "case_sensitive", "attribute"}, "sort");
  const bool rev = b[0] && truthy(*b[0]);
  const bool cs = b[1] && truthy(*b[1]);
  std::vector<Value> items = items_of(rt, v);
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : items) {
    Value k = b[2] && !b[2]->is_none() ? get_path(rt, item, to_str(*b[2])) : item;
    keyed.emplace_back(fold_case(k, cs), std::move(item));
  }
  rt.charge(keyed.size() * 8);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return rev ? compare(y.first, x.first, "<") < 0 : compare(x.first, y.first, "<") < 0;
  });
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::list(std::move(out));
}

Value f_string(Runtime& rt, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "string");
  if (v.is_string()) return v;
  return result_str(rt, to_str(v));
}

Value f_sum(Runtime& rt, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"attribute", "start"}, "sum");
  Value total = arg_or(b, 1, Value(0));
  for (const Value& item : items_of(rt, v)) {
    total = binary_op(rt, "+", total, b[0] && !b[0]->is_none() ? get_path(rt, item, to_str(*b[0])) : item);
  }
  return total;
}

Value f_tojson(Runtime& rt, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"ensure_ascii", "indent", "separators", "sort_keys"}, "tojson");
  int indent = -1;
  std::string indent_str;
  if (b[1] && !b[1]->is_none()) {
    if (b[1]->is_string()) {
      indent = 0;
      indent_str = b[1]->str();
    } else if (b[1]->is_int() || b[1]->is_bool()) {
      indent = static_cast<int>(std::clamp<int64_t>(b[1]->as_int(), 0, 1000));
      indent_str.assign(static_cast<size_t>(indent), ' ');
    } else {
      throw Error("indent must be an int or a string");
    }
  }
  std::optional<std::pair<std::string, std::string>> seps;
  if (b[2] && !b[2]->is_none()) {
    if (!b[2]->is_list() || b[2]->list().items.size() != 2) throw Error("separators must be a pair of strings");
    seps.emplace(to_str(b[2]->list().items[0]), to_str(b[2]->list().items[1]));
  }
  std::string out = to_json(v, b[0] && truthy(*b[0]), indent, indent_str, seps, b[3] && truthy(*b[3]));
  return result_str(rt, std::move(out));
}

Value f_trim(Runtime& rt, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"chars"}, "trim");
  std::optional<std::string> chars;
  if (b[0] && !b[0]->is_none()) chars = to_str(*b[0]);
  return result_str(rt, std::string(py_strip(to_str(v), chars, true, true)), v);
}

Value f_truncate(Runtime& rt, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"length", "killwords", "end", "leeway"}, "truncate");
  const std::string s = to_str(v);
  const int64_t len = int_arg(b, 0, 255, "length");
  const bool killwords = b[1] && truthy(*b[1]);
  const std::string end = str_arg(b, 2, "...");
  const int64_t leeway = int_arg(b, 3, 5, "leeway");
  const int64_t end_len = static_cast<int64_t>(count_code_points(end));
  if (len < end_len) throw Error("expected length >= " + std::to_string(end_len));
  if (leeway < 0) throw Error("expected leeway >= 0");
  std::vector<size_t> offs = code_point_offsets(s);
  const int64_t n = static_cast<int64_t>(offs.size()) - 1;
  if (n <= len + leeway) return v.is_string() ? v : Value(s);
  std::string head = s.substr(0, offs[len - end_len]);
  if (!killwords) {
    const size_t sp = head.rfind(' ');
    if (sp != std::string::npos) head = head.substr(0, sp);
  }
  return result_str(rt, head + end);
}

Value f_unique(Runtime& rt, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"case_sensitive", "attribute"}, "unique");
  const bool cs = b[0] && truthy(*b[0]);
  std::vector<Value> out;
  std::unordered_map<std::string, bool> seen;
  for (const Value& item : items_of(rt, v)) {
    Value k = fold_case(b[1] && !b[1]->is_none() ? get_path(rt, item, to_str(*b[1])) : item, cs);
    if (seen.emplace(hash_key(k), true).second) out.push_back(item);
  }
  return Value::generator(std::move(out));
}

Value f_wordcount(Runtime&, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "wordcount");
  const std::string s = to_str(v);
  int64_t n = 0;
  bool in_word = false;
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    i = utf8_next(s, i, &c);
    const bool w = is_py_word(c);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

Value f_pprint(Runtime& rt, const Value& v, const CallArgs& a) {
  bind_args(a, {}, "pprint");
  return result_str(rt, repr(v));
}

Value f_groupby(Runtime& rt, const Value& v, const CallArgs& a) {
  Args b = bind_args(a, {"attribute", "default", "case_sensitive"}, "groupby");
  if (!b[0]) throw Error("groupby() missing required argument 'attribute'");
  const bool cs = b[2] && truthy(*b[2]);
  const std::string path = to_str(*b[0]);
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& item : items_of(rt, v)) {
    Value k = get_path(rt, item, path);
    if (k.is_undefined() && b[1]) k = *b[1];
    keyed.emplace_back(fold_case(k, cs), item);
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& x, const auto& y) { return compare(x.first, y.first, "<") < 0; });
  std::vector<Value> groups;
  for (size_t i = 0; i < keyed.size();) {
    std::vector<Value> members;
    size_t j = i;
    for (; j < keyed.size() && equals(keyed[j].first, keyed[i].first); ++j) members.push_back(keyed[j].second);
    Value grouper = keyed[i].first;
    if (!cs) {
      // jinja2 reports the grouper as the first item's original value.
      Value orig = get_path(rt, keyed[i].second, path);
      if (!orig.is_undefined()) grouper = orig;
    }
    groups.push_back(Value::list({grouper, Value::list(std::move(members))}, true));
    i = j;
  }
  return Value::list(std::move(groups));
}

const std::unordered_map<std::string_view, FilterFn>& filter_table() {
  static const std::unordered_map<std::string_view, FilterFn> kTable = {
      {"abs", f_abs},           {"attr", f_attr},         {"batch", f_batch},
      {"capitalize", f_capitalize}, {"center", f_center}, {"count", f_length},
      {"d", f_default},         {"default", f_default},   {"dictsort", f_dictsort},
      {"e", f_escape},          {"escape", f_escape},     {"forceescape", f_forceescape},
      {"first", f_first},       {"float", f_float},       {"format", f_format},
      {"groupby", f_groupby},   {"indent", f_indent},     {"int", f_int},
      {"items", f_items},       {"join", f_join},         {"last", f_last},
      {"length", f_length},     {"list", f_list},         {"lower", f_lower},
      {"map", f_map},           {"max", f_max},           {"min", f_min},
      {"pprint", f_pprint},     {"reject", f_reject},     {"rejectattr", f_rejectattr},
      {"replace", f_replace},   {"reverse", f_reverse},   {"round", f_round},
      {"safe", f_safe},         {"select", f_select},     {"selectattr", f_selectattr},
      {"slice", f_slice},       {"sort", f_sort},         {"string", f_string},
      {"sum", f_sum},           {"title", f_title},       {"tojson", f_tojson},
      {"trim", f_trim},         {"truncate", f_truncate}, {"unique", f_unique},
      {"upper", f_upper},       {"wordcount", f_wordcount},
  };
  return kTable;
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  const auto& t = filter_table();
  auto it = t.find(name);
  return it == t.end() ? nullptr : it->second;
}

}  // namespace tessera::jinja
