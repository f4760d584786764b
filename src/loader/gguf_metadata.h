// GGUF metadata values and the bounds-checked reader the GGUF parser is built on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tessera {

// GGUF's metadata value types (gguf_type), with their on-disk ids.
enum class GgufType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

std::string_view gguf_type_name(GgufType t);
// Name of a ggml tensor type id ("Q4_K"), also for types Tessera does not support;
// "unknown" for ids ggml does not define.
std::string_view ggml_type_name(uint32_t ggml_type);

// One metadata value. Strings and the elements of numeric arrays are not copied: they
// point into the file's bytes and live as long as the GgufFile.
class GgufValue {
 public:
  GgufValue() = default;

  GgufType type() const { return type_; }
  bool is_array() const { return type_ == GgufType::kArray; }

  // Scalars; nullopt when the type does not convert.
  std::optional<int64_t> to_int() const;   // any integer type whose value fits in int64
  std::optional<double> to_float() const;  // f32, f64 or any integer type
  std::optional<bool> to_bool() const;     // bool only
  std::optional<std::string_view> to_string() const;  // string only

  // Arrays (size() is 0 for scalars).
  GgufType elem_type() const { return elem_type_; }
  size_t size() const { return count_; }
  // Element i < size(). Cheap for scalar and string elements; an element that is itself
  // an array is copied.
  GgufValue at(size_t i) const;
  // Whole arrays; nullopt when this is not an array or an element does not convert.
  std::optional<std::vector<int64_t>> to_int_array() const;
  std::optional<std::vector<float>> to_float_array() const;  // f32/f64/integer elements
  std::optional<std::vector<std::string_view>> to_string_array() const;

  // Short human-readable form for logs and tools: 64, "llama", [string x 49152: "a", ...].
  std::string debug_string(size_t max_elems = 4) const;

 private:
  friend class GgufReader;

  GgufType type_ = GgufType::kU8;
  GgufType elem_type_ = GgufType::kU8;  // arrays only
  uint64_t bits_ = 0;                   // scalars: the value as read, zero-extended
  std::string_view str_;                // kString
  // Arrays: fixed-width elements stay in the file (little-endian, count_ of them);
  // strings and nested arrays are decoded.
  const std::byte* raw_ = nullptr;
  size_t count_ = 0;
  std::vector<std::string_view> strings_;
  std::vector<GgufValue> arrays_;
};

// Sequential little-endian reader over untrusted bytes: every read is bounds-checked and
// a failed read says what it was reading, where, and what the file has left.
class GgufReader {
 public:
  // Reads `bytes` from offset `start`; offsets in messages are from the start of `bytes`.
  GgufReader(std::span<const std::byte> bytes, size_t start)
      : bytes_(bytes), pos_(start < bytes.size() ? start : bytes.size()) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }

  Status read_u32(uint32_t& out, const char* what);
  Status read_u64(uint64_t& out, const char* what);
  Status read_string(std::string_view& out, const char* what);
  // A value of type `type` (read from the file, so any uint32 may arrive here).
  Status read_value(uint32_t type, GgufValue& out);

 private:
  Status read_array(GgufValue& out, int depth);
  Status read_value_at_depth(uint32_t type, GgufValue& out, int depth);
  Status truncated(size_t need, const char* what) const;

  std::span<const std::byte> bytes_;
  size_t pos_ = 0;
};

}  // namespace tessera
