#include "chat/python_json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tessera::chat {

namespace {

void dump_string(const std::string& s, std::string& out) {
  out.push_back('"');
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
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
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

// Python's float repr: shortest round-trip digits, ".0" on integral values, exponent form
// outside 1e-4 <= |x| < 1e16.
void dump_float(double d, std::string& out) { out += python_float_repr(d); }

void dump(const nlohmann::ordered_json& v, std::string& out) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: out += "null"; break;
    case nlohmann::json::value_t::boolean: out += v.get<bool>() ? "true" : "false"; break;
    case nlohmann::json::value_t::number_integer: out += std::to_string(v.get<int64_t>()); break;
    case nlohmann::json::value_t::number_unsigned: out += std::to_string(v.get<uint64_t>()); break;
    case nlohmann::json::value_t::number_float: dump_float(v.get<double>(), out); break;
    case nlohmann::json::value_t::string: dump_string(v.get_ref<const std::string&>(), out); break;
    case nlohmann::json::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : v) {
        if (!first) out += ", ";
        first = false;
        dump(e, out);
      }
      out.push_back(']');
      break;
    }
    case nlohmann::json::value_t::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [k, e] : v.items()) {
        if (!first) out += ", ";
        first = false;
        dump_string(k, out);
        out += ": ";
        dump(e, out);
      }
      out.push_back('}');
      break;
    }
    default: out += "null"; break;  // binary / discarded: not produced by parsing JSON
  }
}

}  // namespace

std::string python_float_repr(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  const std::string sign = std::signbit(x) ? "-" : "";
  if (x == 0.0) return sign + "0.0";
  // Shortest round-trip digits (as CPython's repr picks them; snprintf-based searches differ
  // at some powers of two), then laid out the way repr() lays them out.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, std::fabs(x), std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));
  const size_t e = sci.find('e');
  std::string digits(sci.substr(0, e));
  std::erase(digits, '.');
  const int exp = std::atoi(std::string(sci.substr(e + 1)).c_str());
  const int point = exp + 1;  // digits before the decimal point
  const int n = static_cast<int>(digits.size());
  if (point > -4 && point <= 16) {
    if (point <= 0) return sign + "0." + std::string(static_cast<size_t>(-point), '0') + digits;
    if (point >= n) return sign + digits + std::string(static_cast<size_t>(point - n), '0') + ".0";
    return sign + digits.substr(0, static_cast<size_t>(point)) + "." + digits.substr(static_cast<size_t>(point));
  }
  std::string out = sign + digits.substr(0, 1);
  if (n > 1) out += "." + digits.substr(1);
  const int a = exp < 0 ? -exp : exp;
  out += exp < 0 ? "e-" : "e+";
  if (a < 10) out += '0';
  return out + std::to_string(a);
}

std::string python_json_dumps(const nlohmann::ordered_json& value) {
  std::string out;
  dump(value, out);
  return out;
}

std::optional<nlohmann::ordered_json> python_json_loads(std::string_view text) {
  auto v = nlohmann::ordered_json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) return std::nullopt;
  return v;
}

}  // namespace tessera::chat
