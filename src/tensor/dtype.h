// Element types of weights and activations, including GGUF's block-quantized types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kI32,
  // GGUF block-quantized types. A row of n elements holds n / block_size blocks.
  kQ4_0,  // 32 x 4-bit, fp16 scale
  kQ4_1,  // 32 x 4-bit, fp16 scale + min
  kQ5_0,  // 32 x 5-bit, fp16 scale
  kQ5_1,  // 32 x 5-bit, fp16 scale + min
  kQ8_0,  // 32 x 8-bit, fp16 scale
  kQ4_K,  // 256 x 4-bit super-block, 6-bit sub-block scales/mins
  kQ5_K,  // 256 x 5-bit super-block
  kQ6_K,  // 256 x 6-bit super-block
};

struct DTypeInfo {
  std::string_view name;
  int64_t block_size;   // elements per block (1 for plain types)
  int64_t block_bytes;  // bytes per block
  bool quantized;
};

const DTypeInfo& dtype_info(DType t);
inline std::string_view dtype_name(DType t) { return dtype_info(t).name; }

// Bytes of a row of n elements; n must be a multiple of the block size.
inline int64_t row_bytes(DType t, int64_t n) {
  const DTypeInfo& i = dtype_info(t);
  return n / i.block_size * i.block_bytes;
}

// GGUF's numeric type ids (ggml_type) for the types we support.
std::optional<DType> dtype_from_ggml_type(uint32_t ggml_type);

}  // namespace tessera
