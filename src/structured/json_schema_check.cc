#include "structured/json_schema_check.h"

#include "structured/repeat_regex.h"

#include <algorithm>
#include <array>
#include <vector>
#include <string_view>

namespace tessera::structured {
namespace {

using Json = nlohmann::ordered_json;

// Keywords xgrammar's converter ignores (it logs and goes on), so outputs could break them.
constexpr std::array<std::string_view, 9> kIgnored = {"not",      "if",          "then",        "else",
                                                      "contains", "minContains", "maxContains", "dependentRequired",
                                                      "dependentSchemas"};
// The string formats it turns into patterns. Others stay annotations, as JSON Schema's
// validators treat every format by default: nothing to refuse.
constexpr std::array<std::string_view, 14> kFormats = {
    "email", "date",          "time",         "date-time",    "duration",     "ipv4",        "ipv6",
    "hostname", "uuid",       "uri",          "uri-reference", "uri-template", "json-pointer", "relative-json-pointer"};

// Whether s has a format the engine turns into a pattern (others are annotations).
bool known_format(const Json& s) {
  const auto it = s.find("format");
  if (it == s.end() || !it->is_string()) return false;
  const std::string f = it->get<std::string>();
  for (std::string_view k : kFormats) {
    if (f == k) return true;
  }
  return false;
}

// Every local reference's target ("#/components/schemas/X" as well as "#/$defs/X"): the
// subschemas the walks below reach only through $ref.
void collect_refs(const Json& s, std::vector<std::string>* refs, int depth) {
  if (depth > 256) return;
  if (s.is_object()) {
    for (const auto& [key, v] : s.items()) {
      if (key == "$ref" && v.is_string()) {
        const std::string r = v.get<std::string>();
        if (r.rfind("#/", 0) == 0 && std::find(refs->begin(), refs->end(), r) == refs->end()) refs->push_back(r);
      } else {
        collect_refs(v, refs, depth + 1);
      }
    }
  } else if (s.is_array()) {
    for (const Json& v : s) collect_refs(v, refs, depth + 1);
  }
}

std::string escape_pointer(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string refuse(std::string_view keyword, const std::string& at, std::string_view why = "") {
  return "keyword '" + std::string(keyword) + "' at " + (at.empty() ? "/" : at) + " is not supported" +
         (why.empty() ? "" : std::string(" (") + std::string(why) + ")");
}

bool has_type(const Json& s, std::string_view t) {
  const auto it = s.find("type");
  if (it == s.end()) return false;
  if (it->is_string()) return it->get<std::string>() == t;
  if (it->is_array()) {
    for (const Json& e : *it) {
      if (e.is_string() && e.get<std::string>() == t) return true;
    }
  }
  return false;
}

std::string check(const Json& s, const std::string& at, int depth);

// Each subschema in a map (properties, $defs, ...) or a list (anyOf, prefixItems, ...).
std::string check_children(const Json& s, const std::string& at, int depth) {
  for (const char* map : {"properties", "patternProperties", "$defs", "definitions"}) {
    const auto it = s.find(map);
    if (it == s.end() || !it->is_object()) continue;
    for (const auto& [key, sub] : it->items()) {
      if (std::string e = check(sub, at + "/" + map + "/" + escape_pointer(key), depth + 1); !e.empty()) return e;
    }
  }
  for (const char* list : {"anyOf", "oneOf", "allOf", "prefixItems"}) {
    const auto it = s.find(list);
    if (it == s.end() || !it->is_array()) continue;
    for (size_t i = 0; i < it->size(); ++i) {
      if (std::string e = check((*it)[i], at + "/" + list + "/" + std::to_string(i), depth + 1); !e.empty()) return e;
    }
  }
  for (const char* one : {"items", "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "propertyNames"}) {
    const auto it = s.find(one);
    if (it == s.end()) continue;
    if (std::string e = check(*it, at + "/" + one, depth + 1); !e.empty()) return e;
  }
  return "";
}

std::string check(const Json& s, const std::string& at, int depth) {
  if (!s.is_object()) return "";  // true / false, or not a schema (the engine's parser says so)
  if (depth > 256) return "the schema nests deeper than 256 levels at " + at;
  for (std::string_view k : kIgnored) {
    if (s.contains(k)) return refuse(k, at);
  }
  if (const auto it = s.find("uniqueItems"); it != s.end() && !(it->is_boolean() && !it->get<bool>())) {
    return refuse("uniqueItems", at);
  }
  if (s.contains("multipleOf")) {
    if (!has_type(s, "integer")) return refuse("multipleOf", at, "integers only");
    for (const char* bound : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (s.contains(bound)) return refuse("multipleOf", at, std::string("with ") + bound);
    }
  }
  if (const auto req = s.find("required"); req != s.end() && req->is_array()) {
    const auto props = s.find("properties");
    for (const Json& name : *req) {
      if (!name.is_string()) continue;
      if (props == s.end() || !props->is_object() || !props->contains(name.get<std::string>())) {
        return refuse("required", at, "'" + name.get<std::string>() + "' is not in properties");
      }
    }
  }
  if (const auto it = s.find("allOf"); it != s.end() && it->is_array() && it->size() > 1) {
    return refuse("allOf", at, "one subschema only");
  }
  if (const auto it = s.find("$ref"); it != s.end() && it->is_string()) {
    const std::string ref = it->get<std::string>();
    if (ref != "#" && ref.rfind("#/", 0) != 0) return refuse("$ref", at, "only references inside the schema: " + ref);
  }
  const bool length = s.contains("minLength") || s.contains("maxLength");
  if (const auto it = s.find("format"); it != s.end() && it->is_string()) {
    const std::string f = it->get<std::string>();
    bool known = false;
    for (std::string_view k : kFormats) known = known || f == k;
    if (known && length) return refuse("minLength/maxLength", at, "with format '" + f + "'");
  }
  if (length && s.contains("pattern")) return refuse("minLength/maxLength", at, "with pattern");
  return check_children(s, at, depth);
}

}  // namespace

std::string dot_excludes_line_breaks(const std::string& regex);

namespace {

// Automaton states a schema may spend on unrolled string lengths (repeat_regex.h; each costs
// a precomputed mask, docs/benchmarks.md has the time). Past it, lengths keep the counter.
constexpr int64_t kUnrollBudget = 1024;

// A string's length bounds as a pattern: characters a JSON string holds unescaped (the
// engine's '.' would admit control characters), their count unrolled while the budget lasts.
std::string length_pattern(int64_t lo, int64_t hi, int64_t* budget) {
  const std::string atom = "[^\"\\\\\\x00-\\x1f]";
  const int64_t states = unrolled_repeat_states(lo, hi);
  if (std::max(lo, hi) > kEngineUnrollLimit && (hi < 0 || hi >= lo) && states <= *budget) {
    *budget -= states;
    return "^" + unrolled_repeat(atom, lo, hi) + "$";
  }
  return "^" + atom + "{" + std::to_string(lo) + "," + (hi < 0 ? "" : std::to_string(hi)) + "}$";
}

void rewrite(Json& s, int depth, int64_t* budget) {
  if (!s.is_object() || depth > 256) return;
  const bool bounded = s.contains("minLength") || s.contains("maxLength");
  if (bounded && has_type(s, "string") && !s.contains("pattern") && !known_format(s)) {
    const auto bound = [&](const char* k, int64_t none) -> int64_t {
      const auto it = s.find(k);
      return it != s.end() && it->is_number_integer() ? std::max<int64_t>(0, it->get<int64_t>()) : none;
    };
    const int64_t lo = bound("minLength", 0), hi = bound("maxLength", -1);
    s["pattern"] = length_pattern(lo, hi, budget);  // hi < lo: the engine refuses the pattern
    s.erase("minLength");
    s.erase("maxLength");
  }
  if (const auto it = s.find("pattern"); it != s.end() && it->is_string()) {
    *it = dot_excludes_line_breaks(it->get<std::string>());
  }
  for (const char* map : {"properties", "patternProperties", "$defs", "definitions"}) {
    const auto it = s.find(map);
    if (it == s.end() || !it->is_object()) continue;
    for (auto& [key, sub] : it->items()) rewrite(sub, depth + 1, budget);
  }
  for (const char* list : {"anyOf", "oneOf", "allOf", "prefixItems"}) {
    const auto it = s.find(list);
    if (it == s.end() || !it->is_array()) continue;
    for (Json& sub : *it) rewrite(sub, depth + 1, budget);
  }
  for (const char* one : {"items", "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "propertyNames"}) {
    const auto it = s.find(one);
    if (it != s.end()) rewrite(*it, depth + 1, budget);
  }
}

// The longest chain of schemas that are only a local $ref to the next ("#/$defs/a" ->
// {"$ref": "#/$defs/b"} -> ...): the engine resolves each link by recursion.
constexpr int kMaxRefChain = 32;

const Json* resolve_local(const Json& root, const std::string& ref) {
  if (ref == "#") return &root;
  try {
    const Json& target = root.at(Json::json_pointer(ref.substr(1)));
    return &target;
  } catch (const std::exception&) {
    return nullptr;  // a bad pointer: the engine's parser names it
  }
}

std::string check_ref_chains(const Json& root, const Json& s, const std::string& at, int depth) {
  if (depth > 256) return "";
  if (s.is_object()) {
    if (const auto it = s.find("$ref"); it != s.end() && it->is_string()) {
      int links = 0;
      const Json* cur = &s;
      while (cur->is_object() && cur->size() == 1 && cur->contains("$ref") && (*cur)["$ref"].is_string()) {
        if (++links > kMaxRefChain) {
          return refuse("$ref", at, "a chain of more than " + std::to_string(kMaxRefChain) + " references, or a cycle");
        }
        cur = resolve_local(root, (*cur)["$ref"].get<std::string>());
        if (cur == nullptr) break;
      }
    }
    for (const auto& [key, v] : s.items()) {
      if (std::string e = check_ref_chains(root, v, at + "/" + escape_pointer(key), depth + 1); !e.empty()) return e;
    }
  } else if (s.is_array()) {
    for (size_t i = 0; i < s.size(); ++i) {
      if (std::string e = check_ref_chains(root, s[i], at + "/" + std::to_string(i), depth + 1); !e.empty()) return e;
    }
  }
  return "";
}

}  // namespace

std::string dot_excludes_line_breaks(const std::string& regex) {
  std::string out;
  out.reserve(regex.size());
  bool in_class = false;
  for (size_t i = 0; i < regex.size(); ++i) {
    const char c = regex[i];
    if (c == '\\' && i + 1 < regex.size()) {  // an escape: copied as it is
      out += c;
      out += regex[++i];
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      // A ']' right after "[" or "[^" is a member, not the class's end.
      if (i + 1 < regex.size() && regex[i + 1] == '^') out += regex[++i];
      if (i + 1 < regex.size() && regex[i + 1] == ']') out += regex[++i];
      continue;
    }
    if (c == '.') {
      out += "[^\\n\\r]";
      continue;
    }
    out += c;
  }
  return out;
}

std::string unsupported_schema_keyword(const nlohmann::ordered_json& schema) {
  if (std::string e = check(schema, "", 0); !e.empty()) return e;
  std::vector<std::string> refs;
  collect_refs(schema, &refs, 0);
  for (const std::string& r : refs) {
    if (const Json* target = resolve_local(schema, r)) {
      if (std::string e = check(*target, r.substr(1), 0); !e.empty()) return e;
    }
  }
  return check_ref_chains(schema, schema, "", 0);
}

nlohmann::ordered_json enforceable_schema(nlohmann::ordered_json schema) {
  std::vector<std::string> refs;
  collect_refs(schema, &refs, 0);
  int64_t budget = kUnrollBudget;
  rewrite(schema, 0, &budget);
  for (const std::string& r : refs) {  // rewriting is idempotent: targets the walk reached pass again
    try {
      rewrite(schema.at(Json::json_pointer(r.substr(1))), 0, &budget);
    } catch (const std::exception&) {
      // a pointer to nothing: the engine's parser names it
    }
  }
  return schema;
}

}  // namespace tessera::structured
