// What filters, tests, methods and globals see of a running render: the resource budget,
// attribute/item lookup with jinja2's sandbox rules, and calls back into the interpreter.
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

#include "chat/jinja/value.h"

namespace tessera::jinja {

// Bounds on one render; a template that would exceed one fails with an error instead of
// hanging or exhausting memory.
struct RenderLimits {
  uint64_t max_steps = 10'000'000;       // expression evaluations, loop iterations, and
                                         // elements touched by filters, all together
  size_t max_output_bytes = 32u << 20;   // the rendered text
  size_t max_string_bytes = 32u << 20;   // any single string value
  size_t max_list_items = 1u << 20;      // any single list or dict
  int max_call_depth = 100;              // nested macro calls
};

class Runtime {
 public:
  explicit Runtime(const RenderLimits& limits) : limits_(limits) {}
  virtual ~Runtime() = default;

  // Accounts for `n` units of work; throws once the step budget is spent.
  void charge(uint64_t n) {
    steps_ += n;
    if (steps_ > limits_.max_steps) throw Error("template exceeded its step limit (runaway loop?)");
  }
  void check_string_size(size_t bytes) const {
    if (bytes > limits_.max_string_bytes) throw Error("string value exceeds the size limit");
  }
  void check_list_size(size_t n) const {
    if (n > limits_.max_list_items) throw Error("list or dict exceeds the size limit");
  }
  const RenderLimits& limits() const { return limits_; }

  // Calls a function value (macro, bound method, global) with the given arguments.
  virtual Value call(const Value& fn, CallArgs& args) = 0;
  // jinja2's Environment.getattr / getitem under the immutable sandbox.
  Value getattr(const Value& obj, std::string_view name);
  Value getitem(const Value& obj, const Value& key);

  // The time strftime_now() reports (UTC, seconds since the epoch); nullopt = the clock.
  std::optional<std::time_t> now;

 private:
  RenderLimits limits_;
  uint64_t steps_ = 0;
};

}  // namespace tessera::jinja
