#include "loader/gguf_metadata.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>

#include "common/check.h"
#include "common/mmap_file.h"

namespace tessera {
namespace {

static_assert(std::endian::native == std::endian::little, "the loaders read little-endian data");

// Real files never nest arrays; the cap keeps a hostile file from exhausting the stack.
constexpr int kMaxArrayDepth = 8;
// Bytes an array element takes at least: a string its length, an array its type + count.
constexpr size_t kMinStringBytes = 8;
constexpr size_t kMinArrayBytes = 12;

bool is_known_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::kF64); }

// Width of a fixed-size type, 0 for string and array.
size_t fixed_width(GgufType t) {
  switch (t) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kBool: return 1;
    case GgufType::kU16:
    case GgufType::kI16: return 2;
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kF32: return 4;
    case GgufType::kU64:
    case GgufType::kI64:
    case GgufType::kF64: return 8;
    case GgufType::kString:
    case GgufType::kArray: return 0;
  }
  return 0;
}

uint64_t load_le(const std::byte* p, size_t width) {
  uint64_t v = 0;
  std::memcpy(&v, p, width);  // little-endian host: the low bytes land in place
  return v;
}

bool is_integer(GgufType t) {
  switch (t) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kU16:
    case GgufType::kI16:
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kU64:
    case GgufType::kI64: return true;
    default: return false;
  }
}

std::optional<int64_t> decode_int(GgufType t, uint64_t bits) {
  switch (t) {
    case GgufType::kU8:
    case GgufType::kU16:
    case GgufType::kU32: return static_cast<int64_t>(bits);
    case GgufType::kI8: return static_cast<int8_t>(bits);
    case GgufType::kI16: return static_cast<int16_t>(bits);
    case GgufType::kI32: return static_cast<int32_t>(bits);
    case GgufType::kI64: return static_cast<int64_t>(bits);
    case GgufType::kU64:
      if (bits > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(bits);
    default: return std::nullopt;
  }
}

std::optional<double> decode_float(GgufType t, uint64_t bits) {
  if (t == GgufType::kF32) return std::bit_cast<float>(static_cast<uint32_t>(bits));
  if (t == GgufType::kF64) return std::bit_cast<double>(bits);
  if (t == GgufType::kU64) return static_cast<double>(bits);
  if (const auto i = decode_int(t, bits)) return static_cast<double>(*i);
  return std::nullopt;
}

}  // namespace

std::string_view gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::kU8: return "u8";
    case GgufType::kI8: return "i8";
    case GgufType::kU16: return "u16";
    case GgufType::kI16: return "i16";
    case GgufType::kU32: return "u32";
    case GgufType::kI32: return "i32";
    case GgufType::kF32: return "f32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kU64: return "u64";
    case GgufType::kI64: return "i64";
    case GgufType::kF64: return "f64";
  }
  return "unknown";
}

std::string_view ggml_type_name(uint32_t ggml_type) {
  // ggml_type ids; 4 and 5 (Q4_2, Q4_3) and 31-33 (Q4_0 repacks) were removed upstream.
  static constexpr std::string_view kNames[] = {
      "F32",     "F16",    "Q4_0",   "Q4_1",    "",       "",       "Q5_0",   "Q5_1",
      "Q8_0",    "Q8_1",   "Q2_K",   "Q3_K",    "Q4_K",   "Q5_K",   "Q6_K",   "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",  "IQ4_NL", "IQ3_S",  "IQ2_S",  "IQ4_XS",
      "I8",      "I16",    "I32",    "I64",     "F64",    "IQ1_M",  "BF16",   "",
      "",        "",       "TQ1_0",  "TQ2_0",   "",       "",       "",       "MXFP4",
  };
  if (ggml_type >= std::size(kNames) || kNames[ggml_type].empty()) return "unknown";
  return kNames[ggml_type];
}

std::optional<int64_t> GgufValue::to_int() const { return decode_int(type_, bits_); }

std::optional<double> GgufValue::to_float() const { return decode_float(type_, bits_); }

std::optional<bool> GgufValue::to_bool() const {
  if (type_ != GgufType::kBool) return std::nullopt;
  return bits_ != 0;
}

std::optional<std::string_view> GgufValue::to_string() const {
  if (type_ != GgufType::kString) return std::nullopt;
  return str_;
}

GgufValue GgufValue::at(size_t i) const {
  TESSERA_CHECK(is_array() && i < count_);
  if (elem_type_ == GgufType::kArray) return arrays_[i];
  GgufValue v;
  v.type_ = elem_type_;
  if (elem_type_ == GgufType::kString) {
    v.str_ = strings_[i];
  } else {
    const size_t w = fixed_width(elem_type_);
    v.bits_ = load_le(raw_ + i * w, w);
  }
  return v;
}

std::optional<std::vector<int64_t>> GgufValue::to_int_array() const {
  if (!is_array() || !is_integer(elem_type_)) return std::nullopt;
  const size_t w = fixed_width(elem_type_);
  std::vector<int64_t> out(count_);
  for (size_t i = 0; i < count_; ++i) {
    const auto v = decode_int(elem_type_, load_le(raw_ + i * w, w));
    if (!v) return std::nullopt;
    out[i] = *v;
  }
  return out;
}

std::optional<std::vector<float>> GgufValue::to_float_array() const {
  if (!is_array() || (elem_type_ != GgufType::kF32 && elem_type_ != GgufType::kF64 &&
                      !is_integer(elem_type_))) {
    return std::nullopt;
  }
  std::vector<float> out(count_);
  if (elem_type_ == GgufType::kF32 && count_ > 0) {  // the common case (token scores)
    std::memcpy(out.data(), raw_, count_ * sizeof(float));
    return out;
  }
  const size_t w = fixed_width(elem_type_);
  for (size_t i = 0; i < count_; ++i) {
    out[i] = static_cast<float>(*decode_float(elem_type_, load_le(raw_ + i * w, w)));
  }
  return out;
}

std::optional<std::vector<std::string_view>> GgufValue::to_string_array() const {
  if (!is_array() || elem_type_ != GgufType::kString) return std::nullopt;
  return strings_;
}

std::string GgufValue::debug_string(size_t max_elems) const {
  switch (type_) {
    case GgufType::kString: return quote_untrusted(str_);
    case GgufType::kBool: return bits_ ? "true" : "false";
    case GgufType::kF32:
    case GgufType::kF64: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.9g", *to_float());
      return buf;
    }
    case GgufType::kU64: return std::to_string(bits_);
    case GgufType::kArray: {
      std::string s = "[" + std::string(gguf_type_name(elem_type_)) + " x " +
                      std::to_string(count_) + (count_ ? ": " : "");
      for (size_t i = 0; i < count_ && i < max_elems; ++i) {
        if (i) s += ", ";
        s += at(i).debug_string(max_elems);
      }
      if (count_ > max_elems) s += ", ...";
      return s + "]";
    }
    default: return std::to_string(*to_int());
  }
}

Status GgufReader::truncated(size_t need, const char* what) const {
  return Status::error("truncated: " + std::string(what) + " at offset " + std::to_string(pos_) +
                       " needs " + std::to_string(need) + " bytes but " +
                       std::to_string(remaining()) + " remain");
}

Status GgufReader::read_u32(uint32_t& out, const char* what) {
  if (remaining() < 4) return truncated(4, what);
  out = static_cast<uint32_t>(load_le(bytes_.data() + pos_, 4));
  pos_ += 4;
  return Status();
}

Status GgufReader::read_u64(uint64_t& out, const char* what) {
  if (remaining() < 8) return truncated(8, what);
  out = load_le(bytes_.data() + pos_, 8);
  pos_ += 8;
  return Status();
}

Status GgufReader::read_string(std::string_view& out, const char* what) {
  uint64_t len = 0;
  TESSERA_RETURN_IF_ERROR(read_u64(len, what));
  if (len > remaining()) {
    pos_ -= 8;  // report the offset of the length field
    return Status::error(std::string(what) + " at offset " + std::to_string(pos_) +
                         " has length " + std::to_string(len) + " but only " +
                         std::to_string(remaining() - 8) + " bytes follow");
  }
  out = std::string_view(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
  pos_ += len;
  return Status();
}

Status GgufReader::read_value(uint32_t type, GgufValue& out) {
  return read_value_at_depth(type, out, 0);
}

Status GgufReader::read_value_at_depth(uint32_t type, GgufValue& out, int depth) {
  if (!is_known_type(type)) {
    return Status::error("unknown value type " + std::to_string(type) + " at offset " +
                         std::to_string(pos_));
  }
  out.type_ = static_cast<GgufType>(type);
  if (out.type_ == GgufType::kString) return read_string(out.str_, "string");
  if (out.type_ == GgufType::kArray) return read_array(out, depth + 1);
  const size_t w = fixed_width(out.type_);
  if (remaining() < w) return truncated(w, "value");
  out.bits_ = load_le(bytes_.data() + pos_, w);
  if (out.type_ == GgufType::kBool && out.bits_ > 1) {
    return Status::error("bool at offset " + std::to_string(pos_) + " is " +
                         std::to_string(out.bits_) + ", not 0 or 1");
  }
  pos_ += w;
  return Status();
}

Status GgufReader::read_array(GgufValue& out, int depth) {
  if (depth > kMaxArrayDepth) {
    return Status::error("arrays nested deeper than " + std::to_string(kMaxArrayDepth) +
                         " levels at offset " + std::to_string(pos_));
  }
  uint32_t elem = 0;
  uint64_t count = 0;
  TESSERA_RETURN_IF_ERROR(read_u32(elem, "array element type"));
  if (!is_known_type(elem)) {
    return Status::error("array at offset " + std::to_string(pos_ - 4) +
                         " has unknown element type " + std::to_string(elem));
  }
  TESSERA_RETURN_IF_ERROR(read_u64(count, "array length"));
  out.elem_type_ = static_cast<GgufType>(elem);
  const size_t w = fixed_width(out.elem_type_);
  const size_t min_bytes = w     ? w
                           : out.elem_type_ == GgufType::kString ? kMinStringBytes
                                                                 : kMinArrayBytes;
  // Checked before any allocation, so a huge count cannot make us reserve memory.
  if (count > remaining() / min_bytes) {
    return Status::error("array at offset " + std::to_string(pos_ - 12) + " claims " +
                         std::to_string(count) + " " +
                         std::string(gguf_type_name(out.elem_type_)) + " elements but only " +
                         std::to_string(remaining()) + " bytes follow");
  }
  out.count_ = static_cast<size_t>(count);
  if (w != 0) {
    out.raw_ = bytes_.data() + pos_;
    if (out.elem_type_ == GgufType::kBool) {
      for (size_t i = 0; i < out.count_; ++i) {
        if (static_cast<uint8_t>(out.raw_[i]) > 1) {
          return Status::error("bool at offset " + std::to_string(pos_ + i) + " is " +
                               std::to_string(static_cast<uint8_t>(out.raw_[i])) +
                               ", not 0 or 1");
        }
      }
    }
    pos_ += out.count_ * w;
    return Status();
  }
  if (out.elem_type_ == GgufType::kString) {
    out.strings_.resize(out.count_);
    for (size_t i = 0; i < out.count_; ++i) {
      Status s = read_string(out.strings_[i], "string");
      if (!s.ok()) {
        return Status::error(s.message() + " (element " + std::to_string(i) + " of " +
                             std::to_string(out.count_) + ")");
      }
    }
    return Status();
  }
  out.arrays_.resize(out.count_);
  for (size_t i = 0; i < out.count_; ++i) {
    out.arrays_[i].type_ = GgufType::kArray;
    Status s = read_array(out.arrays_[i], depth + 1);
    if (!s.ok()) {
      return Status::error(s.message() + " (element " + std::to_string(i) + " of " +
                           std::to_string(out.count_) + ")");
    }
  }
  return Status();
}

}  // namespace tessera
