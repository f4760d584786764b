#include "tensor/tensor.h"

namespace tessera {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

TensorView row_slice(const TensorView& m, int64_t first, int64_t count) {
  TensorView v;
  v.dtype = m.dtype;
  v.shape = {count, m.cols()};
  v.data = m.row(first);
  v.nbytes = static_cast<size_t>(count * row_bytes(m.dtype, m.cols()));
  return v;
}

}  // namespace tessera
