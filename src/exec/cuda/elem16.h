// Device storage whose 16-bit element type (bf16 or f16: the model's compute dtype) is fixed
// at run time: weights, activations and the KV cache are held as Elem16 and seen as the
// kernels' element type T by the forward pass compiled for that type.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backend/cuda/ops.h"

namespace tessera::cuda {

using Elem16 = uint16_t;

template <typename T>
T* as(Elem16* p) {
  static_assert(std::is_same_v<T, bf16> || std::is_same_v<T, f16>, "a 16-bit element type");
  return reinterpret_cast<T*>(p);
}
template <typename T>
const T* as(const Elem16* p) {
  static_assert(std::is_same_v<T, bf16> || std::is_same_v<T, f16>, "a 16-bit element type");
  return reinterpret_cast<const T*>(p);
}

}  // namespace tessera::cuda
