// libFuzzer target: parsing and rendering arbitrary template text must return a value or
// a clean error, never crash, hang or run away with memory (the render limits are
// lowered so that every input finishes quickly).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "chat/jinja/template.h"

namespace {

const tessera::jinja::Value& context() {
  static const tessera::jinja::Value kContext = [] {
    auto j = nlohmann::ordered_json::parse(R"({
      "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi \u00e9 \u4f60\u597d"},
        {"role": "assistant", "content": "Hello", "reasoning_content": "think",
         "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 1, "y": [1.5, null]}}}]},
        {"role": "tool", "tool_call_id": "abc", "content": "42"}
      ],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
      "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "n": null, "i": 3, "f": 2.5
    })");
    return *tessera::jinja::value_from_json(j);
  }();
  return kContext;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view src(reinterpret_cast<const char*>(data), size);
  auto tmpl = tessera::jinja::Template::parse(src);
  if (!tmpl.ok()) {
    if (tmpl.error().empty()) __builtin_trap();
    return 0;
  }
  tessera::jinja::RenderOptions options;
  options.now = 1752148800;  // 2025-07-10T12:00:00Z
  options.limits.max_steps = 200'000;
  options.limits.max_output_bytes = 1 << 20;
  options.limits.max_string_bytes = 1 << 20;
  options.limits.max_list_items = 1 << 16;
  auto out = tmpl->render(context(), options);
  if (out.ok() && out->size() > options.limits.max_output_bytes) __builtin_trap();
  return 0;
}
