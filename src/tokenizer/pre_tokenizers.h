// HF tokenizers pre-tokenizers: ByteLevel, Split, Metaspace, Digits, Punctuation,
// Whitespace, WhitespaceSplit, BertPreTokenizer, Sequence. Pieces stream depth-first into a
// sink, so a whole encode allocates no per-piece strings.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tessera::tokenizer {

// A non-owning reference to a callable (no allocation, unlike std::function).
template <typename Sig>
class FunctionRef;
template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT: implicit by design
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(obj_, std::forward<Args>(args)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

// One split of the input. at_origin: the split starts at byte 0 of the original input (what
// Metaspace's prepend_scheme "first" asks).
struct PreToken {
  std::string_view text;
  bool at_origin;
};

using PreTokenSink = FunctionRef<Status(const PreToken&)>;

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits (and maybe rewrites) one non-empty piece; emits only non-empty pieces.
  virtual Status pre_tokenize(const PreToken& in, PreTokenSink out) const = 0;

  // True when the last step is ByteLevel: its byte-to-char mapping can then be left to a
  // model that works on raw bytes (see BpeModel), which is the fast path.
  virtual bool ends_with_byte_level() const { return false; }
  // Makes that final ByteLevel emit raw bytes instead of mapped chars.
  virtual void set_raw_byte_output() {}
};

// Builds from the tokenizer.json object; null JSON gives a null pointer.
Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const nlohmann::json& j);

// GPT-2's byte-to-unicode table: the UTF-8 of the char that stands for each byte.
const std::string& byte_level_char(unsigned char b);
// Inverse: the byte a char stands for, or -1 when the char is not in the table.
int byte_level_byte(char32_t c);

}  // namespace tessera::tokenizer
