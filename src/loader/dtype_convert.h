// A checkpoint's float tensors converted to one element type at load (vLLM's --dtype on the
// CPU: weights kept in float16, bfloat16 or float32 whatever the file stores).
#pragma once

#include <memory>

#include "loader/weight_store.h"
#include "tensor/dtype.h"

namespace tessera {

// A store whose kF32 / kF16 / kBF16 tensors are copies of `store`'s converted to `to`
// (round to nearest even); quantized and integer tensors, and tensors already of type `to`,
// are `store`'s own views. `to` must be kF32, kF16 or kBF16.
std::shared_ptr<const WeightStore> convert_float_weights(std::shared_ptr<const WeightStore> store, DType to);

}  // namespace tessera
