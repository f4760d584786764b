// GGUF v2/v3 checkpoints (llama.cpp's format): metadata key/values plus tensors, mapped
// in place.
//
// Layout: "GGUF", u32 version, u64 tensor_count, u64 kv_count, kv_count x (string key,
// u32 type, value), tensor_count x (string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type,
// u64 offset), padding to general.alignment, the data area (offsets are relative to it).
// Strings are a u64 length and bytes; everything is little-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/mmap_file.h"
#include "common/status.h"
#include "loader/gguf_metadata.h"
#include "loader/weight_store.h"

namespace tessera {

struct GgufTensorInfo {
  std::string_view name;  // points into the file
  uint32_t ggml_type = 0;
  uint64_t offset = 0;    // relative to the data area
  TensorView view;        // shape is ne[] reversed: ne[0] (innermost) is the last dim
};

class GgufFile final : public WeightStore {
 public:
  static constexpr uint64_t kDefaultAlignment = 32;

  static Result<std::unique_ptr<GgufFile>> open(const std::string& path);
  // Parses a whole file held in memory; `bytes` must outlive the result, whose strings and
  // tensor views point into it. Errors start with source_name.
  static Result<std::unique_ptr<GgufFile>> parse(std::span<const std::byte> bytes,
                                                 const std::string& source_name);

  // WeightStore. names() is in file order.
  const TensorView* find(std::string_view name) const override;
  std::vector<std::string> names() const override;
  std::string source() const override { return source_; }

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the data area
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_info(std::string_view name) const;

  // Metadata. Keys are in file order; get() is nullptr when the key is absent.
  std::vector<std::string_view> keys() const;
  const GgufValue* get(std::string_view key) const;
  // Typed getters: nullopt when the key is absent or its value does not convert
  // (conversions as in GgufValue::to_int etc.).
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string_view> get_string(std::string_view key) const;
  std::optional<std::vector<std::string_view>> get_string_array(std::string_view key) const;
  std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;
  std::optional<std::vector<float>> get_float_array(std::string_view key) const;

 private:
  GgufFile() = default;
  Status parse_bytes(std::span<const std::byte> bytes);
  Status parse_tensor_info(GgufReader& reader, uint64_t idx, uint64_t count);
  Status place_tensors(std::span<const std::byte> bytes);

  std::string source_;
  MappedFile mapping_;  // empty when parsed from caller-owned bytes
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string_view, GgufValue>> kvs_;
  std::unordered_map<std::string_view, size_t> kv_idx_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_idx_;
};

}  // namespace tessera
