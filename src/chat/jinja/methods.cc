// Python methods of str, list and dict values as the immutable sandbox exposes them.
#include <algorithm>
#include <cstdio>
#include <unordered_set>

#include "chat/jinja/builtins.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/text.h"

namespace tessera::jinja {
namespace {

using Args = std::vector<std::optional<Value>>;

std::string str_of(const std::optional<Value>& v, const char* what) {
  if (!v || !v->is_string()) throw Error(std::string(what) + " must be a string");
  return v->str();
}

std::optional<std::string> chars_of(const std::optional<Value>& v) {
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) throw Error("strip arg must be None or str");
  return v->str();
}

int64_t int_of(const std::optional<Value>& v, int64_t dflt) {
  if (!v || v->is_none()) return dflt;
  if (!v->is_int() && !v->is_bool()) throw Error("an integer is required, not " + type_name(*v));
  return v->as_int();
}

Value str_list(std::vector<std::string> parts) {
  std::vector<Value> out;
  out.reserve(parts.size());
  for (std::string& p : parts) out.emplace_back(std::move(p));
  return Value::list(std::move(out));
}

// One replacement field of str.format: "{name!conv:spec}".
std::string format_field(Runtime& rt, const Value& v, char conv, std::string_view spec) {
  std::string s = conv == 'r' ? repr(v) : to_str(v);
  if (spec.empty()) return s;
  // [[fill]align][0][width][.precision][type]
  char fill = ' ', align = 0;
  size_t p = 0;
  if (spec.size() >= 2 && std::string_view("<>^=").find(spec[1]) != std::string_view::npos) {
    fill = spec[0], align = spec[1], p = 2;
  } else if (!spec.empty() && std::string_view("<>^=").find(spec[0]) != std::string_view::npos) {
    align = spec[0], p = 1;
  }
  if (p < spec.size() && spec[p] == '0') fill = '0', align = align ? align : '=', ++p;
  int64_t width = 0;
  while (p < spec.size() && spec[p] >= '0' && spec[p] <= '9' && width < 100000) width = width * 10 + (spec[p++] - '0');
  int precision = -1;
  if (p < spec.size() && spec[p] == '.') {
    precision = 0;
    ++p;
    while (p < spec.size() && spec[p] >= '0' && spec[p] <= '9' && precision < 1000) precision = precision * 10 + (spec[p++] - '0');
  }
  const char type = p < spec.size() ? spec[p] : 0;
  if (type == 'f' || type == 'e' || type == 'g' || type == '%' || (precision >= 0 && v.is_float() && type == 0)) {
    if (!v.is_number()) throw Error("Unknown format code '" + std::string(1, type) + "' for object of type '" + type_name(v) + "'");
    char buf[1200];
    const double x = type == '%' ? v.as_double() * 100 : v.as_double();
    const char t = type == '%' ? 'f' : (type == 0 ? 'g' : type);
    std::snprintf(buf, sizeof buf, "%.*f", precision < 0 ? 6 : precision, x);
    if (t != 'f') std::snprintf(buf, sizeof buf, (std::string("%.*") + t).c_str(), precision < 0 ? 6 : precision, x);
    s = buf;
    if (type == '%') s += '%';
  } else if (type == 'd') {
    if (!v.is_int() && !v.is_bool()) throw Error("Unknown format code 'd' for object of type '" + type_name(v) + "'");
    s = std::to_string(v.as_int());
  } else if (precision >= 0 && v.is_string()) {
    std::vector<size_t> offs = code_point_offsets(s);
    if (static_cast<size_t>(precision) + 1 < offs.size()) s = s.substr(0, offs[precision]);
  }
  rt.check_string_size(static_cast<size_t>(width));
  const int64_t len = static_cast<int64_t>(count_code_points(s));
  if (width > len) {
    const size_t pad = static_cast<size_t>(width - len);
    if (!align) align = v.is_number() ? '>' : '<';
    const std::string f(1, fill);
    auto rep = [&](size_t n) {
      std::string r;
      for (size_t i = 0; i < n; ++i) r += f;
      return r;
    };
    if (align == '<') s += rep(pad);
    else if (align == '>') s = rep(pad) + s;
    else if (align == '^') s = rep(pad / 2) + s + rep(pad - pad / 2);
    else if (align == '=') {
      const bool sign = !s.empty() && (s[0] == '-' || s[0] == '+');
      s = (sign ? s.substr(0, 1) : "") + rep(pad) + (sign ? s.substr(1) : s);
    }
  }
  return s;
}

std::string str_format(Runtime& rt, const std::string& fmt, const CallArgs& a) {
  std::string out;
  size_t auto_idx = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      throw Error("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) throw Error("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    std::string spec;
    char conv = 's';
    if (size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      if (bang + 2 != field.size()) throw Error("invalid conversion in format string");
      conv = field[bang + 1];
      field.resize(bang);
    }
    // field: "" | index | name, then .attr / [key] parts.
    size_t end = std::min(field.find('.'), field.find('['));
    const std::string head = field.substr(0, end);
    Value v;
    int64_t idx;
    if (head.empty()) {
      if (auto_idx >= a.args.size()) throw Error("Replacement index " + std::to_string(auto_idx) + " out of range");
      v = a.args[auto_idx++];
    } else if (parse_py_int(head, 10, &idx)) {
      if (idx < 0 || static_cast<size_t>(idx) >= a.args.size()) throw Error("Replacement index out of range");
      v = a.args[idx];
    } else {
      bool found = false;
      for (const auto& [k, val] : a.kwargs) {
        if (k == head) v = val, found = true;
      }
      if (!found) throw Error("KeyError: '" + head + "'");
    }
    while (end != std::string::npos && end < field.size()) {
      if (field[end] == '.') {
        size_t next = std::min(field.find('.', end + 1), field.find('[', end + 1));
        v = rt.getattr(v, field.substr(end + 1, next == std::string::npos ? std::string::npos : next - end - 1));
        end = next;
      } else {
        const size_t rb = field.find(']', end);
        if (rb == std::string::npos) throw Error("Missing ']' in format string");
        const std::string key = field.substr(end + 1, rb - end - 1);
        v = parse_py_int(key, 10, &idx) ? rt.getitem(v, Value(idx)) : rt.getitem(v, Value(key));
        end = rb + 1 < field.size() ? rb + 1 : std::string::npos;
      }
    }
    out += format_field(rt, v, conv, spec);
    rt.check_string_size(out.size());
  }
  return out;
}

bool affix_match(const std::string& s, const Value& arg, bool prefix) {
  auto one = [&](const Value& x) {
    if (!x.is_string()) throw Error(std::string(prefix ? "startswith" : "endswith") + " first arg must be str or a tuple of str");
    const std::string& a = x.str();
    if (a.size() > s.size()) return false;
    return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (arg.is_tuple()) {
    for (const Value& x : arg.list().items) {
      if (one(x)) return true;
    }
    return false;
  }
  return one(arg);
}

template <typename Pred>
Value all_chars(const std::string& s, Pred pred) {
  if (s.empty()) return Value(false);
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    i = utf8_next(s, i, &c);
    if (!pred(c)) return Value(false);
  }
  return Value(true);
}

Value call_str_method(Runtime& rt, const Value& self, const std::string& name, const CallArgs& a) {
  const std::string& s = self.str();
  auto bind = [&](std::initializer_list<std::string_view> params) { return bind_args(a, params, name); };
  // Markup's methods return Markup (jinja2 strings marked safe stay safe).
  auto ret = [&](std::string r) {
    rt.check_string_size(r.size());
    rt.charge(r.size() / 8);
    return self.same_markup(std::move(r));
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    Args b = bind({"chars"});
    return ret(std::string(py_strip(s, chars_of(b[0]), name != "rstrip", name != "lstrip")));
  }
  if (name == "split" || name == "rsplit") {
    Args b = bind({"sep", "maxsplit"});
    std::optional<std::string> sep = chars_of(b[0]);
    if (sep && sep->empty()) throw Error("empty separator");
    rt.charge(s.size() / 8 + 1);
    return str_list(py_split(s, sep, int_of(b[1], -1), name == "rsplit"));
  }
  if (name == "splitlines") {
    Args b = bind({"keepends"});
    return str_list(py_splitlines(s, b[0] && truthy(*b[0])));
  }
  if (name == "startswith" || name == "endswith") {
    Args b = bind({"prefix", "start", "end"});
    if (!b[0]) throw Error(name + "() takes at least 1 argument (0 given)");
    std::string sub = s;
    if (b[1] || b[2]) {
      Value sl = slice(rt, Value(s), b[1] ? *b[1] : Value::none(), b[2] ? *b[2] : Value::none(), Value::none());
      sub = to_str(sl);
    }
    return Value(affix_match(sub, *b[0], name == "startswith"));
  }
  if (name == "upper") return bind({}), ret(py_upper(s));
  if (name == "lower" || name == "casefold") return bind({}), ret(py_lower(s));
  if (name == "title") return bind({}), ret(py_title(s));
  if (name == "capitalize") return bind({}), ret(py_capitalize(s));
  if (name == "swapcase") return bind({}), ret(py_swapcase(s));
  if (name == "replace") {
    Args b = bind({"old", "new", "count"});
    std::string old = str_of(b[0], "replace() argument 1"), repl = str_of(b[1], "replace() argument 2");
    if (self.is_markup()) {
      if (!b[0]->is_markup()) old = html_escape(old);
      if (!b[1]->is_markup()) repl = html_escape(repl);
    }
    const int64_t count = int_of(b[2], -1);
    const int64_t hits = old.empty() ? static_cast<int64_t>(count_code_points(s)) + 1 : py_count(s, old);
    rt.check_string_size(s.size() + static_cast<size_t>(count < 0 ? hits : std::min(count, hits)) * repl.size());
    return ret(py_replace(s, old, repl, count));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    Args b = bind({"sub", "start", "end"});
    const std::string sub = str_of(b[0], "sub");
    std::string hay = s;
    int64_t base = 0;
    if (b[1] || b[2]) {
      const int64_t n = static_cast<int64_t>(count_code_points(s));
      int64_t st = int_of(b[1], 0);
      if (st < 0) st = std::max<int64_t>(st + n, 0);
      hay = to_str(slice(rt, Value(s), b[1] ? *b[1] : Value::none(), b[2] ? *b[2] : Value::none(), Value::none()));
      base = std::min(st, n);
    }
    int64_t r = py_find(hay, sub, name[0] == 'r');
    if (r >= 0) r += base;
    if (r < 0 && (name == "index" || name == "rindex")) throw Error("substring not found");
    return Value(r);
  }
  if (name == "count") {
    Args b = bind({"sub"});
    return Value(py_count(s, str_of(b[0], "sub")));
  }
  if (name == "join") {
    Args b = bind({"iterable"});
    if (!b[0]) throw Error("join() takes exactly one argument");
    std::string out;
    bool first = true;
    for (const Value& item : iterate(rt, *b[0])) {
      if (!item.is_string()) throw Error("sequence item: expected str instance, " + type_name(item) + " found");
      if (!first) out += s;
      first = false;
      out += self.is_markup() && !item.is_markup() ? html_escape(item.str()) : item.str();
      rt.check_string_size(out.size());
    }
    return ret(std::move(out));
  }
  if (name == "format") return ret(str_format(rt, s, a));
  if (name == "center" || name == "ljust" || name == "rjust") {
    Args b = bind({"width", "fillchar"});
    const int64_t width = int_of(b[0], 0);
    const std::string fill = b[1] ? str_of(b[1], "fillchar") : " ";
    if (count_code_points(fill) != 1) throw Error("The fill character must be exactly one character long");
    rt.check_string_size(static_cast<size_t>(std::max<int64_t>(width, 0)) * fill.size());
    if (name == "center") return ret(py_center(s, width, fill));
    const int64_t len = static_cast<int64_t>(count_code_points(s));
    std::string pad;
    for (int64_t i = len; i < width; ++i) pad += fill;
    return ret(name == "ljust" ? s + pad : pad + s);
  }
  if (name == "zfill") {
    Args b = bind({"width"});
    const int64_t width = int_of(b[0], 0);
    rt.check_string_size(static_cast<size_t>(std::max<int64_t>(width, 0)));
    const int64_t len = static_cast<int64_t>(count_code_points(s));
    if (width <= len) return Value(s);
    const bool sign = !s.empty() && (s[0] == '-' || s[0] == '+');
    return ret((sign ? s.substr(0, 1) : "") + std::string(static_cast<size_t>(width - len), '0') + (sign ? s.substr(1) : s));
  }
  if (name == "partition" || name == "rpartition") {
    Args b = bind({"sep"});
    const std::string sep = str_of(b[0], "sep");
    if (sep.empty()) throw Error("empty separator");
    const size_t hit = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (hit == std::string::npos) {
      return name == "partition" ? Value::list({Value(s), Value(""), Value("")}, true)
                                 : Value::list({Value(""), Value(""), Value(s)}, true);
    }
    return Value::list({Value(s.substr(0, hit)), Value(sep), Value(s.substr(hit + sep.size()))}, true);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    Args b = bind({"affix"});
    const std::string x = str_of(b[0], "affix");
    if (name == "removeprefix" && s.compare(0, x.size(), x) == 0) return Value(s.substr(x.size()));
    if (name == "removesuffix" && !x.empty() && x.size() <= s.size() && s.compare(s.size() - x.size(), x.size(), x) == 0) {
      return Value(s.substr(0, s.size() - x.size()));
    }
    return Value(s);
  }
  bind({});
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") return all_chars(s, is_py_digit);
  if (name == "isalpha") return all_chars(s, is_py_alpha);
  if (name == "isalnum") return all_chars(s, [](char32_t c) { return is_py_alpha(c) || is_py_digit(c); });
  if (name == "isspace") return all_chars(s, is_py_space);
  if (name == "islower" || name == "isupper") {
    bool cased = false;
    char32_t c;
    for (size_t i = 0; i < s.size();) {
      i = utf8_next(s, i, &c);
      if (name == "islower" ? is_py_upper(c) : is_py_lower(c)) return Value(false);
      cased = cased || (name == "islower" ? is_py_lower(c) : is_py_upper(c));
    }
    return Value(cased);
  }
  throw Error("'str' object has no attribute '" + name + "'");
}

Value call_list_method(Runtime& rt, const Value& self, const std::string& name, const CallArgs& a) {
  const auto& items = self.list().items;
  if (name == "index") {
    Args b = bind_args(a, {"value"}, name);
    if (!b[0]) throw Error("index() takes at least 1 argument");
    for (size_t i = 0; i < items.size(); ++i) {
      if (equals(items[i], *b[0])) return Value(static_cast<int64_t>(i));
    }
    throw Error(repr(*b[0]) + " is not in list");
  }
  if (name == "count") {
    Args b = bind_args(a, {"value"}, name);
    if (!b[0]) throw Error("count() takes exactly one argument");
    int64_t n = 0;
    for (const Value& v : items) n += equals(v, *b[0]) ? 1 : 0;
    return Value(n);
  }
  bind_args(a, {}, name);
  rt.charge(items.size());
  return Value::list(items, self.is_tuple());  // copy
}

Value call_dict_method(Runtime& rt, const Value& self, const std::string& name, const CallArgs& a) {
  const Dict& d = self.dict();
  if (name == "get") {
    Args b = bind_args(a, {"key", "default"}, name);
    if (!b[0]) throw Error("get expected at least 1 argument, got 0");
    if (const Value* v = d.find(*b[0])) return *v;
    return b[1] ? *b[1] : Value::none();
  }
  bind_args(a, {}, name);
  rt.charge(d.size() * 2);
  std::vector<Value> out;
  out.reserve(d.size());
  for (const auto& [k, v] : d.entries()) {
    if (name == "keys") out.push_back(k);
    else if (name == "values") out.push_back(v);
    else out.push_back(Value::list({k, v}, true));
  }
  if (name == "copy") {
    auto copy = std::make_shared<Dict>();
    for (const auto& [k, v] : d.entries()) copy->set(k, v);
    return Value::dict(std::move(copy));
  }
  return Value::list(std::move(out));
}

Value bound(const Value& self, std::string name) {
  auto fn = std::make_shared<Function>();
  fn->name = name;
  fn->fn = [self, name](Runtime& rt, CallArgs& a) -> Value {
    if (self.is_string()) return call_str_method(rt, self, name, a);
    if (self.is_list()) return call_list_method(rt, self, name, a);
    return call_dict_method(rt, self, name, a);
  };
  return Value::function(std::move(fn));
}

Value unsafe(const Value& self, std::string_view name) {
  return Value::undefined("access to attribute '" + std::string(name) + "' of '" + type_name(self) +
                          "' object is unsafe.");
}

}  // namespace

std::optional<Value> get_method(const Value& self, std::string_view name) {
  static const std::unordered_set<std::string_view> kStr = {
      "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith",
      "upper", "lower", "casefold", "title", "capitalize", "swapcase", "replace", "find",
      "rfind", "index", "rindex", "count", "join", "format", "center", "ljust", "rjust",
      "zfill", "partition", "rpartition", "removeprefix", "removesuffix", "isdigit",
      "isdecimal", "isnumeric", "isalpha", "isalnum", "isspace", "islower", "isupper"};
  static const std::unordered_set<std::string_view> kList = {"index", "count", "copy"};
  static const std::unordered_set<std::string_view> kListUnsafe = {
      "append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};
  static const std::unordered_set<std::string_view> kDict = {"get", "items", "keys", "values", "copy"};
  static const std::unordered_set<std::string_view> kDictUnsafe = {"clear", "pop", "popitem", "setdefault",
                                                                    "update"};
  if (self.is_string()) {
    if (kStr.count(name)) return bound(self, std::string(name));
  } else if (self.is_list() && !self.is_generator()) {
    if (kList.count(name)) return bound(self, std::string(name));
    if (!self.is_tuple() && kListUnsafe.count(name)) return unsafe(self, name);
  } else if (self.is_mapping()) {
    if (kDict.count(name)) return bound(self, std::string(name));
    if (kDictUnsafe.count(name)) return unsafe(self, name);
  }
  return std::nullopt;
}

}  // namespace tessera::jinja
