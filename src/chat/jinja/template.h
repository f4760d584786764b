// A compiled Jinja2 template: the engine's public face. Parse once, render many times
// (rendering is const and thread-safe). Errors come back as Status with "line L, column
// C: message".
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/jinja/runtime.h"
#include "chat/jinja/value.h"
#include "common/status.h"

namespace tessera::jinja {

struct Stmt;

struct RenderOptions {
  RenderLimits limits;
  // What strftime_now() sees (UTC); nullopt reads the system clock.
  std::optional<std::time_t> now;
};

class Template {
 public:
  static Result<Template> parse(std::string_view source);

  // `context` must be a dict (or undefined for none); its keys are the template's variables.
  Result<std::string> render(const Value& context, const RenderOptions& options = {}) const;

 private:
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
};

// JSON -> Value (objects keep their key order). Fails on nesting deeper than
// kMaxValueDepth.
Result<Value> value_from_json(const nlohmann::ordered_json& j);

}  // namespace tessera::jinja
