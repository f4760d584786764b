// The writing half of python_literal.h: json.dumps(v, ensure_ascii=False) of Python values, also
// used piecewise by the JSON re-serializer in json_scan.cc.
#include <cmath>
#include <cstdlib>
#include <string>

#include "server/tool_parsers/python_literal.h"
#include "server/tool_parsers/tool_parser_util.h"

namespace tessera::server {
namespace {

using Kind = PyValue::Kind;

void dump(const PyValue& v, std::string& out) {
  switch (v.kind) {
    case Kind::kNone: out += "null"; return;
    case Kind::kBool: out += v.flag ? "true" : "false"; return;
    case Kind::kInt: out += v.text; return;
    case Kind::kFloat: out += python_float_repr(v.number); return;
    case Kind::kStr: out += python_json_string(v.text); return;
    case Kind::kList:
      out += '[';
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i > 0) out += ", ";
        dump(v.items[i], out);
      }
      out += ']';
      return;
    case Kind::kDict:
      out += '{';
      for (size_t i = 0; i < v.members.size(); ++i) {
        if (i > 0) out += ", ";
        out += python_json_string(v.members[i].key);
        out += ": ";
        dump(v.members[i].value, out);
      }
      out += '}';
      return;
  }
}

}  // namespace

std::string python_json_dumps(const PyValue& v) {
  std::string out;
  dump(v, out);
  return out;
}

std::string python_json_string(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    size_t len = 0;
    if (decode_utf8(s, i, true, cp, len) != Utf8::kOk) {
      cp = 0xFFFD;  // invalid UTF-8
      len = 1;
    }
    append_json_char(out, cp);
    i += len;
  }
  out += '"';
  return out;
}

void append_json_char(std::string& out, uint32_t cp) {
  static constexpr char kHex[] = "0123456789abcdef";
  static constexpr std::string_view kPlain = "\"\\\n\r\t\b\f";
  static constexpr std::string_view kEscaped = "\"\\nrtbf";
  if (cp < 0x80) {
    if (const size_t k = kPlain.find(static_cast<char>(cp)); k != std::string_view::npos) {
      out += '\\';
      out += kEscaped[k];
      return;
    }
  }
  if (cp < 0x20 || (cp >= 0xD800 && cp <= 0xDFFF)) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(cp >> shift) & 15];
    return;
  }
  append_utf8(out, cp);
}


}  // namespace tessera::server
