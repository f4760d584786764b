// Row conversions between fp32 and every stored weight format.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace tessera::cpu {

// dst[0..n) = dequantized src row of type t (any DType except I32); n % block_size == 0.
// src may have any alignment.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);

// Reference quantizers (fp32 -> blocks of type t, or F16/BF16/F32 conversion) for every
// type dequantize_row accepts. Round-to-nearest per block, no importance weighting: the
// output is valid GGUF data whose dequantization is close to src, not llama.cpp's bit-exact
// choice (K-quant scales in particular are simpler than llama.cpp's search).
void quantize_row(DType t, const float* src, void* dst, int64_t n);

}  // namespace tessera::cpu
