// Python operator semantics on Values: arithmetic, `in`, iteration, slicing and
// printf-style `%` formatting.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja/runtime.h"
#include "chat/jinja/value.h"

namespace tessera::jinja {

// op is one of + - * / // % ** ~.
Value binary_op(Runtime& rt, std::string_view op, const Value& a, const Value& b);
Value negate(const Value& v);
// `item in container`.
bool contains(const Value& container, const Value& item);
// Python iteration: list items, dict keys, string code points; undefined is empty.
std::vector<Value> iterate(Runtime& rt, const Value& v);
// obj[start:stop:step]; undefined when obj is not sliceable or a bound is not an int.
Value slice(Runtime& rt, const Value& obj, const Value& start, const Value& stop, const Value& step);
// fmt % args (args a tuple for several values).
std::string percent_format(Runtime& rt, std::string_view fmt, const Value& args);
// Python int(x) for a string: optional sign, digits, underscores between digits, spaces.
bool parse_py_int(std::string_view s, int base, int64_t* out);
bool parse_py_float(std::string_view s, double* out);

}  // namespace tessera::jinja
