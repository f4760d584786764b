// Non-owning view of a tensor in host memory (weights live in mmapped files).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace tessera {

struct TensorView {
  DType dtype = DType::kF32;
  // Row-major, outermost first. A linear layer's weight is [out_features, in_features],
  // whatever the file format (GGUF's ne[] order is reversed into this).
  std::vector<int64_t> shape;
  const std::byte* data = nullptr;
  size_t nbytes = 0;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  int64_t rows() const { return shape.empty() ? 1 : numel() / cols(); }
  // Start of row r (rows are contiguous, row_bytes(dtype, cols()) apart).
  const std::byte* row(int64_t r) const { return data + r * row_bytes(dtype, cols()); }
};

std::string shape_string(const std::vector<int64_t>& shape);

// Rows [first, first + count) of a matrix, as a view of the same bytes (a fused q/k/v or
// gate/up weight read as its parts). The caller checks the range.
TensorView row_slice(const TensorView& matrix, int64_t first, int64_t count);

}  // namespace tessera
