#include "chat/python_json.h"

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
void dump_float(double d, std::string& out) {
  if (std::isnan(d)) {
    out += "NaN";
    return;
  }
  if (std::isinf(d)) {
    out += d > 0 ? "Infinity" : "-Infinity";
    return;
  }
  char buf[40];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*e", prec - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  // buf = d.ddde[+-]XX with `prec` significant digits.
  std::string mant(buf, std::strchr(buf, 'e'));
  const int exp = std::atoi(std::strchr(buf, 'e') + 1);
  std::string digits;
  const bool neg = mant[0] == '-';
  for (char c : mant) {
    if (c >= '0' && c <= '9') digits.push_back(c);
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string r = neg ? "-" : "";
  if (exp >= 16 || exp < -4) {
    r += digits.substr(0, 1);
    if (digits.size() > 1) r += "." + digits.substr(1);
    char e[8];
    std::snprintf(e, sizeof(e), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    r += e;
  } else if (exp < 0) {
    r += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  } else {
    const size_t int_len = static_cast<size_t>(exp) + 1;
    if (digits.size() <= int_len) {
      r += digits + std::string(int_len - digits.size(), '0') + ".0";
    } else {
      r += digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
  }
  out += r;
}

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
