// Python values as two tool-call formats carry them: literal expressions (what ast.literal_eval
// accepts; the pythonic format's arguments) and JSON as Python's json.loads reads it (qwen3_coder's
// object parameters), both into one value tree that prints exactly as json.dumps(v,
// ensure_ascii=False) does, because vLLM's arguments text is that print.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/python_json.h"

namespace tessera::server {

struct PyMember;

// Only the kinds json.dumps can write: sets, bytes and complex numbers are rejected when read,
// tuples read as lists.
struct PyValue {
  enum class Kind { kNone, kBool, kInt, kFloat, kStr, kList, kDict };
  Kind kind = Kind::kNone;
  bool flag = false;     // kBool
  double number = 0.0;   // kFloat
  // kInt: decimal digits, '-' first when negative (Python ints are unbounded).
  // kStr: WTF-8, i.e. UTF-8 that may hold lone surrogates from "\ud800"-style escapes.
  std::string text;
  std::vector<PyValue> items;     // kList
  std::vector<PyMember> members;  // kDict, in insertion order, keys unique as in a Python dict
};

struct PyMember {
  std::string key;  // as json.dumps writes it: str keys as they are, 1 -> "1", True -> "true"
  std::string eq;   // identity under Python's ==, so that {1: a, 1.0: b, True: c} has one key
  PyValue value;
};

enum class LiteralStatus {
  kOk,
  kIncomplete,  // the text ended inside the literal (only when the caller said more may come)
  kInvalid,
};

// One literal expression starting at text[pos] (after optional whitespace). On kOk, pos is just
// past it. Without at_end, touching the end of text anywhere gives kIncomplete, never a guess, so
// a verdict on a prefix holds for every longer text.
LiteralStatus parse_python_literal(std::string_view text, size_t& pos, bool at_end, PyValue& out);

// Whitespace, line breaks and '#' comments from pos on (Python's spacing inside brackets).
size_t skip_python_space(std::string_view text, size_t pos);

// ast.literal_eval(text) ("1, 2" is a tuple, as in Python), restricted to values json.dumps can
// print; nullopt where it raises.
std::optional<PyValue> python_literal_eval(std::string_view text);
// json.loads(text) for strict JSON (Python also reads NaN and Infinity); nullopt where it fails.
std::optional<PyValue> python_json_loads(std::string_view text);
// int(text) and float(text) of a Python str; nullopt where they raise ValueError.
std::optional<PyValue> python_int(std::string_view text);
std::optional<double> python_float(std::string_view text);

// ---- writing (python_dumps.cc) ----

// json.dumps(v, ensure_ascii=False); lone surrogates print as \udXXX escapes (Python would fail
// to encode them later), invalid UTF-8 as U+FFFD.
std::string python_json_dumps(const PyValue& v);
// json.dumps of a str: quoted and escaped.
std::string python_json_string(std::string_view wtf8);
// One character of a str as json.dumps writes it between the quotes (lone surrogates escaped).
void append_json_char(std::string& out, uint32_t cp);
using chat::python_float_repr;  // a float as json.dumps prints it
// str(int(x)) for a finite integral double, exact ("1e+20" -> "100000000000000000000").
std::string python_int_of_float(double x);
// Whether text is well-formed UTF-8 (no surrogates, nothing past U+10FFFF).
bool valid_utf8(std::string_view text);

}  // namespace tessera::server
