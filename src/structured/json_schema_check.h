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
std::string unsupported_schema_keyword(const nlohmann::json& schema);

// The schema with the same meaning in the form the grammar engine enforces correctly: a
// string bounded by minLength / maxLength (without pattern or format) becomes the pattern
// "^.{min,max}$", which it matches over characters that need no JSON escape (its own
// length-bounded form lets raw control characters into the string: invalid JSON).
nlohmann::json enforceable_schema(nlohmann::json schema);

}  // namespace tessera::structured
