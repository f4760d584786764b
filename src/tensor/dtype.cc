#include "tensor/dtype.h"

#include "common/check.h"

namespace tessera {

const DTypeInfo& dtype_info(DType t) {
  static const DTypeInfo kInfo[] = {
      {"F32", 1, 4, false},      {"F16", 1, 2, false},      {"BF16", 1, 2, false},
      {"I32", 1, 4, false},      {"Q4_0", 32, 18, true},    {"Q4_1", 32, 20, true},
      {"Q5_0", 32, 22, true},    {"Q5_1", 32, 24, true},    {"Q8_0", 32, 34, true},
      {"Q4_K", 256, 144, true},  {"Q5_K", 256, 176, true},  {"Q6_K", 256, 210, true},
  };
  const auto idx = static_cast<size_t>(t);
  TESSERA_CHECK(idx < sizeof(kInfo) / sizeof(kInfo[0]));
  return kInfo[idx];
}

std::optional<DType> dtype_from_ggml_type(uint32_t ggml_type) {
  switch (ggml_type) {
    case 0: return DType::kF32;
    case 1: return DType::kF16;
    case 2: return DType::kQ4_0;
    case 3: return DType::kQ4_1;
    case 6: return DType::kQ5_0;
    case 7: return DType::kQ5_1;
    case 8: return DType::kQ8_0;
    case 12: return DType::kQ4_K;
    case 13: return DType::kQ5_K;
    case 14: return DType::kQ6_K;
    case 26: return DType::kI32;
    case 30: return DType::kBF16;
    default: return std::nullopt;
  }
}

}  // namespace tessera
