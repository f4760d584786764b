// Global functions (range, dict, namespace, raise_exception, strftime_now) and the JSON
// and strftime formatting behind tojson and strftime_now.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "chat/jinja/builtins.h"
#include "chat/jinja/text.h"

namespace tessera::jinja {
namespace {

// jinja2's sandbox refuses longer ranges (MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

Value g_range(Runtime& rt, CallArgs& a) {
  if (!a.kwargs.empty()) throw Error("range() takes no keyword arguments");
  if (a.args.empty() || a.args.size() > 3) throw Error("range expected 1 to 3 arguments");
  int64_t v[3] = {0, 0, 1};
  for (size_t i = 0; i < a.args.size(); ++i) {
    const Value& x = a.args[i];
    if (x.is_undefined()) fail_undefined(x);
    if (!x.is_int() && !x.is_bool()) throw Error("'" + type_name(x) + "' object cannot be interpreted as an integer");
  }
  if (a.args.size() == 1) {
    v[1] = a.args[0].as_int();
  } else {
    v[0] = a.args[0].as_int();
    v[1] = a.args[1].as_int();
    if (a.args.size() == 3) v[2] = a.args[2].as_int();
  }
  const int64_t start = v[0], stop = v[1], step = v[2];
  if (step == 0) throw Error("range() arg 3 must not be zero");
  // Count without overflow: work in doubles for the bound, exact ints for the loop.
  const double count_d = step > 0 ? (static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step)
                                  : (static_cast<double>(start) - static_cast<double>(stop)) / static_cast<double>(-step);
  if (count_d > static_cast<double>(kMaxRange)) {
    throw Error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  }
  std::vector<Value> out;
  for (int64_t x = start; step > 0 ? x < stop : x > stop;) {
    out.emplace_back(x);
    if (__builtin_add_overflow(x, step, &x)) break;
  }
  rt.charge(out.size());
  return Value::list(std::move(out));
}

Value g_dict(Runtime& rt, CallArgs& a) {
  auto d = std::make_shared<Dict>();
  if (a.args.size() > 1) throw Error("dict expected at most 1 argument");
  if (a.args.size() == 1) {
    const Value& src = a.args[0];
    if (src.is_mapping()) {
      for (const auto& [k, v] : src.dict().entries()) d->set(k, v);
    } else if (src.is_list()) {
      for (const Value& pair : src.list().items) {
        if (!pair.is_list() || pair.list().items.size() != 2) {
          throw Error("dictionary update sequence element has the wrong length; 2 is required");
        }
        d->set(pair.list().items[0], pair.list().items[1]);
      }
    } else {
      throw Error("'" + type_name(src) + "' object is not iterable");
    }
  }
  for (auto& [k, v] : a.kwargs) d->set(Value(k), v);
  rt.check_list_size(d->size());
  return Value::dict(std::move(d));
}

Value g_raise_exception(Runtime&, CallArgs& a) {
  if (a.args.size() != 1 || !a.kwargs.empty()) throw Error("raise_exception() takes exactly one argument");
  throw Error(to_str(a.args[0]));
}

Value g_strftime_now(Runtime& rt, CallArgs& a) {
  if (a.args.size() != 1 || !a.kwargs.empty()) throw Error("strftime_now() takes exactly one argument");
  if (!a.args[0].is_string()) throw Error("strftime() argument 1 must be str, not " + type_name(a.args[0]));
  const std::time_t t = rt.now ? *rt.now : std::time(nullptr);
  return Value(py_strftime(a.args[0].str(), t));
}

Value make_fn(const char* name, Value (*fn)(Runtime&, CallArgs&)) {
  auto f = std::make_shared<Function>();
  f->name = name;
  f->fn = fn;
  return Value::function(std::move(f));
}

void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    const auto c = static_cast<unsigned char>(ch);
    if (ensure_ascii && (c >= 0x80 || c == 0x7F)) {
      // \uXXXX, with a surrogate pair above the BMP.
      char32_t cp;
      i = utf8_next(s, i, &cp) - 1;
      char buf[16];
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + static_cast<unsigned>(cp >> 10),
                      0xDC00 + static_cast<unsigned>(cp & 0x3FF));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      }
      out += buf;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

struct JsonWriter {
  bool ensure_ascii;
  int indent;  // < 0: single line
  const std::string& indent_str;
  std::string item_sep, key_sep;
  bool sort_keys;
  std::string out;

  void newline(int level) {
    out += '\n';
    for (int i = 0; i < level; ++i) out += indent_str;
  }

  std::string key_string(const Value& k) {
    switch (k.kind()) {
      case Kind::kString: return k.str();
      case Kind::kBool: return k.as_bool() ? "true" : "false";
      case Kind::kNone: return "null";
      case Kind::kInt: return std::to_string(k.as_int());
      case Kind::kFloat: return number(k.as_double());
      default: throw Error("keys must be str, int, float, bool or None, not " + type_name(k));
    }
  }

  static std::string number(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    return py_repr_float(d);
  }

  void write(const Value& v, int level) {
    if (level > kMaxValueDepth + 1) throw Error("Circular reference detected");
    if (out.size() > (64u << 20)) throw Error("tojson output exceeds the size limit");
    switch (v.kind()) {
      case Kind::kNone: out += "null"; return;
      case Kind::kBool: out += v.as_bool() ? "true" : "false"; return;
      case Kind::kInt: out += std::to_string(v.as_int()); return;
      case Kind::kFloat: out += number(v.as_double()); return;
      case Kind::kString: json_string(out, v.str(), ensure_ascii); return;
      case Kind::kList: {
        if (v.is_generator()) break;
        const auto& items = v.list().items;
        if (items.empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i > 0) out += item_sep;
          if (indent >= 0) newline(level + 1);
          write(items[i], level + 1);
        }
        if (indent >= 0) newline(level);
        out += ']';
        return;
      }
      case Kind::kDict: {
        if (v.dict().is_namespace) break;
        std::vector<const std::pair<Value, Value>*> entries;
        for (const auto& e : v.dict().entries()) entries.push_back(&e);
        if (entries.empty()) {
          out += "{}";
          return;
        }
        if (sort_keys) {
          std::stable_sort(entries.begin(), entries.end(), [](const auto* x, const auto* y) {
            return compare(x->first, y->first, "<") < 0;
          });
        }
        out += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i > 0) out += item_sep;
          if (indent >= 0) newline(level + 1);
          json_string(out, key_string(entries[i]->first), ensure_ascii);
          out += key_sep;
          write(entries[i]->second, level + 1);
        }
        if (indent >= 0) newline(level);
        out += '}';
        return;
      }
      default: break;
    }
    throw Error("Object of type " + type_name(v) + " is not JSON serializable");
  }
};

}  // namespace

Value find_global(std::string_view name) {
  if (name == "range") return make_fn("range", g_range);
  if (name == "dict") return make_fn("dict", g_dict);
  if (name == "namespace") {
    // The interpreter builds namespaces itself (it tracks them to break reference cycles).
    return make_fn("namespace", [](Runtime&, CallArgs&) -> Value { throw Error("namespace() is not available"); });
  }
  if (name == "raise_exception") return make_fn("raise_exception", g_raise_exception);
  if (name == "strftime_now") return make_fn("strftime_now", g_strftime_now);
  return Value::undefined("'" + std::string(name) + "' is undefined");
}

std::string to_json(const Value& v, bool ensure_ascii, int indent, const std::string& indent_str,
                    const std::optional<std::pair<std::string, std::string>>& separators, bool sort_keys) {
  JsonWriter w{ensure_ascii, indent, indent_str, indent >= 0 ? "," : ", ", ": ", sort_keys, {}};
  if (separators) w.item_sep = separators->first, w.key_sep = separators->second;
  w.write(v, 0);
  return std::move(w.out);
}

std::string py_strftime(std::string_view format, std::time_t t) {
  if (format.size() > 4096) throw Error("strftime format is too long");
  std::tm tm{};
  gmtime_r(&t, &tm);
  // Python handles %f, %z, %Z itself (naive datetime: "000000", "", ""); the rest goes to
  // the C library, one directive at a time so that an empty expansion is not an error.
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 >= format.size()) {
      out += format[i];
      continue;
    }
    std::string spec = "%";
    size_t j = i + 1;
    if (format[j] == '-' || format[j] == '_' || format[j] == '0' || format[j] == '^' || format[j] == '#' || format[j] == ':') {
      spec += format[j++];
    }
    if (j >= format.size()) {
      out += format.substr(i);
      break;
    }
    const char c = format[j];
    spec += c;
    i = j;
    if (c == 'f') {
      out += "000000";
    } else if (c == 'z' || c == 'Z') {
      // naive datetime: empty
    } else if (c == '%') {
      out += '%';
    } else if (std::string_view("aAbBcCdDeFgGhHIjmMnprRStTuUVwWxXyY").find(c) != std::string_view::npos) {
      char buf[256];
      const size_t n = std::strftime(buf, sizeof buf, spec.c_str(), &tm);
      out.append(buf, n);
    } else {
      out += spec;  // unknown directives pass through, as glibc does
    }
  }
  return out;
}

}  // namespace tessera::jinja
