// JSON text exactly as Python's json.dumps(value, ensure_ascii=False) writes it (", " and
// ": " separators, keys in insertion order, non-ASCII kept, floats as repr()), and parsing
// as json.loads does for the cases mistral-common relies on. The Mistral chat encoding
// tokenizes such text, so a byte of difference changes the token ids.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tessera::chat {

std::string python_json_dumps(const nlohmann::ordered_json& value);

// A float as json.dumps prints it: repr(x) ("1.0", "1e-05", "1.5e+300"), or Infinity/NaN;
// the shortest digits that round-trip, as CPython picks them.
std::string python_float_repr(double x);

// json.loads(text), or nullopt where Python would raise JSONDecodeError.
std::optional<nlohmann::ordered_json> python_json_loads(std::string_view text);

}  // namespace tessera::chat
