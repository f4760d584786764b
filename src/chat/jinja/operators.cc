#include "chat/jinja/operators.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/jinja/builtins.h"
#include "chat/jinja/text.h"

namespace tessera::jinja {
namespace {

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b) {
  throw Error("unsupported operand type(s) for " + std::string(op) + ": '" + type_name(a) + "' and '" +
              type_name(b) + "'");
}

void check_overflow(bool overflow) {
  if (overflow) throw Error("integer overflow");
}

double py_float_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0.0) {
    if ((b < 0) != (m < 0)) m += b;
  } else {
    m = std::copysign(0.0, b);
  }
  return m;
}

double py_float_floordiv(double a, double b) {
  const double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0.0) return std::copysign(0.0, a / b);
  double floor_div = std::floor(div);
  if (div - floor_div > 0.5) floor_div += 1.0;
  return floor_div;
}

Value repeat(Runtime& rt, const Value& seq, int64_t n) {
  if (n <= 0) return seq.is_string() ? Value(std::string()) : Value::list({}, seq.is_tuple());
  if (seq.is_string()) {
    const size_t len = seq.str().size();
    if (len != 0 && static_cast<uint64_t>(n) > rt.limits().max_string_bytes / len) rt.check_string_size(SIZE_MAX);
    rt.charge(len * n / 8);
    std::string out;
    out.reserve(len * n);
    for (int64_t i = 0; i < n; ++i) out += seq.str();
    return Value(std::move(out));
  }
  const size_t len = seq.list().items.size();
  if (len != 0 && static_cast<uint64_t>(n) > rt.limits().max_list_items / len) rt.check_list_size(SIZE_MAX);
  rt.charge(len * n * 4);
  std::vector<Value> out;
  out.reserve(len * n);
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.list().items.begin(), seq.list().items.end());
  return Value::list(std::move(out), seq.is_tuple());
}

Value int_pow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 0) throw Error("0.0 cannot be raised to a negative power");
    return Value(std::pow(static_cast<double>(base), static_cast<double>(exp)));
  }
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) check_overflow(__builtin_mul_overflow(result, base, &result));
    exp >>= 1;
    if (exp > 0) check_overflow(__builtin_mul_overflow(base, base, &base));
  }
  return Value(result);
}

Value arith(std::string_view op, const Value& a, const Value& b) {
  if (!a.is_float() && !b.is_float()) {
    const int64_t x = a.as_int(), y = b.as_int();
    int64_t r = 0;
    if (op == "+") return check_overflow(__builtin_add_overflow(x, y, &r)), Value(r);
    if (op == "-") return check_overflow(__builtin_sub_overflow(x, y, &r)), Value(r);
    if (op == "*") return check_overflow(__builtin_mul_overflow(x, y, &r)), Value(r);
    if (op == "/") {
      if (y == 0) throw Error("division by zero");
      return Value(static_cast<double>(x) / static_cast<double>(y));
    }
    if (op == "//" || op == "%") {
      if (y == 0) throw Error("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) throw Error("integer overflow");
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) --q, m += y;
      return Value(op == "//" ? q : m);
    }
    if (op == "**") return int_pow(x, y);
  }
  const double x = a.as_double(), y = b.as_double();
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "/") {
    if (y == 0.0) throw Error("float division by zero");
    return Value(x / y);
  }
  if (op == "//") {
    if (y == 0.0) throw Error("float floor division by zero");
    return Value(py_float_floordiv(x, y));
  }
  if (op == "%") {
    if (y == 0.0) throw Error("float modulo");
    return Value(py_float_mod(x, y));
  }
  if (op == "**") {
    if (x == 0.0 && y < 0) throw Error("0.0 cannot be raised to a negative power");
    if (x < 0 && y != std::floor(y)) throw Error("complex results are not supported");
    return Value(std::pow(x, y));
  }
  throw Error("unknown operator " + std::string(op));
}

}  // namespace

Value binary_op(Runtime& rt, std::string_view op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string s = to_str(a);
    append_str(s, b);
    rt.check_string_size(s.size());
    rt.charge(s.size() / 8);
    return Value(std::move(s));
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) return arith(op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (a.is_markup() != b.is_markup()) {
        // Markup + str escapes the plain side (markupsafe's __add__/__radd__).
        std::string s = a.is_markup() ? a.str() + html_escape(b.str()) : html_escape(a.str()) + b.str();
        rt.check_string_size(s.size());
        rt.charge(s.size() / 8);
        return Value::markup(std::move(s));
      }
      rt.check_string_size(a.str().size() + b.str().size());
      rt.charge((a.str().size() + b.str().size()) / 8);
      std::string s;
      s.reserve(a.str().size() + b.str().size());
      s += a.str();
      s += b.str();
      return a.is_markup() ? Value::markup(std::move(s)) : Value(std::move(s));
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      rt.check_list_size(a.list().items.size() + b.list().items.size());
      rt.charge(4 * (a.list().items.size() + b.list().items.size()));
      std::vector<Value> items = a.list().items;
      items.insert(items.end(), b.list().items.begin(), b.list().items.end());
      return Value::list(std::move(items), a.is_tuple());
    }
    if (a.is_string()) throw Error("can only concatenate str (not \"" + type_name(b) + "\") to str");
    if (a.is_list() && !a.is_tuple()) throw Error("can only concatenate list (not \"" + type_name(b) + "\") to list");
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(rt, a, b.as_int());
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(rt, b, a.as_int());
  }
  if (op == "%" && a.is_string()) return Value(percent_format(rt, a.str(), b));
  unsupported(op, a, b);
}

Value negate(const Value& v) {
  if (v.is_float()) return Value(-v.as_double());
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == INT64_MIN) throw Error("integer overflow");
    return Value(-v.as_int());
  }
  if (v.is_undefined()) fail_undefined(v);
  throw Error("bad operand type for unary -: '" + type_name(v) + "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kString:
      if (item.is_undefined()) fail_undefined(item);
      if (!item.is_string()) {
        throw Error("'in <string>' requires string as left operand, not " + type_name(item));
      }
      return container.str().find(item.str()) != std::string::npos;
    case Kind::kList:
      for (const Value& v : container.list().items) {
        if (equals(v, item)) return true;
      }
      return false;
    case Kind::kDict:
      if (!container.dict().is_namespace) return container.dict().find(item) != nullptr;
      break;
    case Kind::kUndefined:
      return false;
    default:
      break;
  }
  throw Error("argument of type '" + type_name(container) + "' is not iterable");
}

std::vector<Value> iterate(Runtime& rt, const Value& v) {
  std::vector<Value> out;
  switch (v.kind()) {
    case Kind::kUndefined:
      return out;
    case Kind::kList:
      rt.charge(v.list().items.size());
      return v.list().items;
    case Kind::kDict:
      if (v.dict().is_namespace) break;
      rt.charge(v.dict().size());
      out.reserve(v.dict().size());
      for (const auto& kv : v.dict().entries()) out.push_back(kv.first);
      return out;
    case Kind::kString: {
      const std::string& s = v.str();
      rt.charge(s.size());
      char32_t c;
      for (size_t i = 0; i < s.size();) {
        const size_t n = utf8_next(s, i, &c);
        out.emplace_back(s.substr(i, n - i));
        i = n;
      }
      return out;
    }
    default:
      break;
  }
  throw Error("'" + type_name(v) + "' object is not iterable");
}

Value slice(Runtime& rt, const Value& obj, const Value& start, const Value& stop, const Value& step) {
  auto bound = [](const Value& b, std::optional<int64_t>* out) {
    if (b.is_none()) return true;
    if (b.is_int() || b.is_bool()) {
      *out = b.as_int();
      return true;
    }
    return false;
  };
  std::optional<int64_t> lo, hi, st;
  if (!bound(start, &lo) || !bound(stop, &hi) || !bound(step, &st)) {
    throw Error("slice indices must be integers or None or have an __index__ method");
  }
  const int64_t s = st.value_or(1);
  if (s == 0) throw Error("slice step cannot be zero");
  std::vector<size_t> offs;
  int64_t n;
  if (obj.is_string()) {
    offs = code_point_offsets(obj.str());
    n = static_cast<int64_t>(offs.size()) - 1;
  } else if (obj.is_list()) {
    n = static_cast<int64_t>(obj.list().items.size());
  } else {
    if (obj.is_undefined()) fail_undefined(obj);
    return Value::undefined("'" + type_name(obj) + "' object is not subscriptable");
  }
  rt.charge(static_cast<uint64_t>(n));
  // CPython's PySlice_AdjustIndices.
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = s < 0 ? -1 : 0;
    } else if (x >= n) {
      x = s < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t b = adjust(lo, s < 0 ? n - 1 : 0);
  const int64_t e = adjust(hi, s < 0 ? -1 : n);
  if (obj.is_string()) {
    const std::string& str = obj.str();
    std::string out;
    if (s == 1) {
      if (b < e) out = str.substr(offs[b], offs[e] - offs[b]);
    } else {
      for (int64_t i = b; s > 0 ? i < e : i > e; i += s) out += str.substr(offs[i], offs[i + 1] - offs[i]);
    }
    return Value(std::move(out));
  }
  std::vector<Value> out;
  for (int64_t i = b; s > 0 ? i < e : i > e; i += s) out.push_back(obj.list().items[i]);
  return Value::list(std::move(out), obj.is_tuple());
}

bool parse_py_int(std::string_view s, int base, int64_t* out) {
  std::string_view t = py_strip(s, std::nullopt, true, true);
  bool neg = false;
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) {
    neg = t[0] == '-';
    t.remove_prefix(1);
  }
  if (base == 16 && t.size() > 2 && t[0] == '0' && (t[1] | 0x20) == 'x') t.remove_prefix(2);
  if (base == 8 && t.size() > 2 && t[0] == '0' && (t[1] | 0x20) == 'o') t.remove_prefix(2);
  if (base == 2 && t.size() > 2 && t[0] == '0' && (t[1] | 0x20) == 'b') t.remove_prefix(2);
  if (t.empty() || t[0] == '_' || t.back() == '_') return false;
  int64_t v = 0;
  bool prev_underscore = false;
  for (char c : t) {
    if (c == '_') {
      if (prev_underscore) return false;
      prev_underscore = true;
      continue;
    }
    prev_underscore = false;
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') d = (c | 0x20) - 'a' + 10;
    if (d < 0 || d >= base) return false;
    if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v)) return false;
  }
  *out = neg ? -v : v;
  return true;
}

bool parse_py_float(std::string_view s, double* out) {
  std::string t(py_strip(s, std::nullopt, true, true));
  if (t.empty()) return false;
  std::string lower = py_lower(t);
  std::string_view body = lower;
  bool neg = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body == "inf" || body == "infinity") {
    *out = neg ? -INFINITY : INFINITY;
    return true;
  }
  if (body == "nan") {
    *out = NAN;
    return true;
  }
  std::string clean;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '_') {
      if (i == 0 || i + 1 == t.size() || !std::isdigit(static_cast<unsigned char>(t[i - 1])) ||
          !std::isdigit(static_cast<unsigned char>(t[i + 1]))) {
        return false;
      }
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-') {
      return false;
    }
    clean += c;
  }
  char* end = nullptr;
  *out = std::strtod(clean.c_str(), &end);
  return end == clean.c_str() + clean.size() && !clean.empty();
}

std::string percent_format(Runtime& rt, std::string_view fmt, const Value& args) {
  std::vector<Value> values;
  if (args.is_tuple()) {
    values = args.list().items;
  } else {
    values.push_back(args);
  }
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) throw Error("incomplete format");
    // Flags, width and precision, passed on to snprintf for numbers.
    std::string spec = "%";
    while (i < fmt.size() && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos) spec += fmt[i++];
    while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])) && spec.size() < 8) spec += fmt[i++];
    if (i < fmt.size() && fmt[i] == '.') {
      spec += fmt[i++];
      while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])) && spec.size() < 12) spec += fmt[i++];
    }
    if (i >= fmt.size()) throw Error("incomplete format");
    const char conv = fmt[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (next >= values.size()) throw Error("not enough arguments for format string");
    const Value& v = values[next++];
    char buf[512];
    switch (conv) {
      case 's':
      case 'r':
      case 'a': {
        std::string s = conv == 's' ? to_str(v) : repr(v);
        if (spec.size() > 1) {
          const int width = std::atoi(spec.c_str() + 1 + (spec[1] == '-'));
          const int64_t len = static_cast<int64_t>(count_code_points(s));
          if (width > len) {
            std::string pad(static_cast<size_t>(width - len), ' ');
            s = spec[1] == '-' ? s + pad : pad + s;
          }
        }
        out += s;
        break;
      }
      case 'd':
      case 'i':
      case 'x':
      case 'X':
      case 'o': {
        if (!v.is_number()) throw Error("%" + std::string(1, conv) + " format: a real number is required, not " + type_name(v));
        const long long n = v.is_float() ? static_cast<long long>(v.as_double()) : v.as_int();
        std::snprintf(buf, sizeof buf, (spec + "ll" + (conv == 'i' ? 'd' : conv)).c_str(), n);
        out += buf;
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G':
        if (!v.is_number()) throw Error("must be real number, not " + type_name(v));
        std::snprintf(buf, sizeof buf, (spec + conv).c_str(), v.as_double());
        out += buf;
        break;
      default:
        throw Error(std::string("unsupported format character '") + conv + "'");
    }
    rt.check_string_size(out.size());
  }
  if (next < values.size()) throw Error("not all arguments converted during string formatting");
  return out;
}

Value Runtime::getattr(const Value& obj, std::string_view name) {
  switch (obj.kind()) {
    case Kind::kUndefined:
      fail_undefined(obj);
    case Kind::kDict:
      if (obj.dict().is_namespace) {
        if (const Value* v = obj.dict().find(name)) return *v;
        return Value::undefined("'Namespace object' has no attribute '" + std::string(name) + "'");
      }
      if (auto m = get_method(obj, name)) return *m;
      if (const Value* v = obj.dict().find(name)) return *v;
      break;
    case Kind::kString:
    case Kind::kList:
      if (auto m = get_method(obj, name)) return *m;
      break;
    default:
      break;
  }
  if (obj.is_none()) return Value::undefined("'None' has no attribute '" + std::string(name) + "'");
  return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + std::string(name) + "'");
}

Value Runtime::getitem(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Kind::kUndefined:
      fail_undefined(obj);
    case Kind::kDict:
      if (!obj.dict().is_namespace) {
        if (key.is_list() && !key.is_tuple()) break;  // unhashable: TypeError, then undefined
        if (key.is_dict()) break;
        if (const Value* v = obj.dict().find(key)) return *v;
      }
      break;
    case Kind::kList:
    case Kind::kString:
      if (key.is_int() || key.is_bool()) {
        int64_t i = key.as_int();
        if (obj.is_list()) {
          const auto& items = obj.list().items;
          const int64_t n = static_cast<int64_t>(items.size());
          if (i < 0) i += n;
          if (i >= 0 && i < n) return items[i];
          return Value::undefined(std::string(obj.is_tuple() ? "tuple" : "list") + " object has no element " +
                                  std::to_string(key.as_int()));
        }
        std::vector<size_t> offs = code_point_offsets(obj.str());
        const int64_t n = static_cast<int64_t>(offs.size()) - 1;
        if (i < 0) i += n;
        if (i >= 0 && i < n) return Value(obj.str().substr(offs[i], offs[i + 1] - offs[i]));
        return Value::undefined("str object has no element " + std::to_string(key.as_int()));
      }
      break;
    default:
      break;
  }
  if (key.is_string()) return getattr(obj, key.str());
  return Value::undefined("'" + type_name(obj) + " object' has no attribute " + repr(key));
}

}  // namespace tessera::jinja
