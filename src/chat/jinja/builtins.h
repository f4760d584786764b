// The builtin filters, tests, methods (str/list/dict) and global functions, matching
// jinja2 3.1 with transformers' chat-template additions (tojson, raise_exception,
// strftime_now, namespace, dict).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "chat/jinja/runtime.h"
#include "chat/jinja/value.h"

namespace tessera::jinja {

using FilterFn = Value (*)(Runtime& rt, const Value& input, const CallArgs& args);
using TestFn = bool (*)(Runtime& rt, const Value& input, const CallArgs& args);

// nullptr when there is no such filter / test.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

// A Python method of a str, list or dict value, bound to it: nullopt when the type has
// no such attribute. Mutating methods come back as an undefined value whose use raises
// jinja2's SecurityError, as in the immutable sandbox.
std::optional<Value> get_method(const Value& self, std::string_view name);

// Global names every template sees: range, namespace, dict, raise_exception,
// strftime_now, cycler-free subset of jinja2's defaults. Undefined when unknown.
Value find_global(std::string_view name);

// HF's tojson: json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
// separators=separators, sort_keys=sort_keys). indent < 0 means None; no separators mean
// the defaults.
std::string to_json(const Value& v, bool ensure_ascii, int indent, const std::string& indent_str,
                    const std::optional<std::pair<std::string, std::string>>& separators,
                    bool sort_keys);

// strftime with Python's datetime extensions (%f, %z, %Z) on a UTC time.
std::string py_strftime(std::string_view format, std::time_t t);

}  // namespace tessera::jinja
