// What the grammar engine cannot enforce in a JSON Schema, found before it compiles one: the
// engine would skip such a keyword and let outputs through that break it, so a request
// naming one is refused instead, with the keyword and where it is.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tessera::structured {

// Empty when every keyword of schema (and of its subschemas) is enforced; else a message
// naming the first that is not and its JSON pointer, e.g. "keyword 'uniqueItems' at
// /properties/tags is not supported".
std::string unsupported_schema_keyword(const nlohmann::ordered_json& schema);

// The schema with the same meaning in the form the grammar engine enforces correctly: a
// string bounded by minLength / maxLength (without pattern or format) becomes a pattern of
// min..max characters that need no JSON escape (its own length-bounded form lets raw control
// characters into the string: invalid JSON); patterns' '.' excludes line breaks (as below).
nlohmann::ordered_json enforceable_schema(nlohmann::ordered_json schema);

// regex with '.' outside character classes as [^\n\r]: JSON Schema's (ECMA) and Python's '.'
// exclude line breaks, the engine's does not.
std::string dot_excludes_line_breaks(const std::string& regex);

}  // namespace tessera::structured
