// How RoPE pairs the dimensions of a head (shared by the model config and the CUDA kernels,
// which compile as C++17).
#pragma once

namespace tessera {

enum class RopeLayout {
  kHalf,         // HF / NeoX: dimension i rotates with i + head_dim/2
  kInterleaved,  // llama.cpp "normal" (GGUF llama q/k rows): dimension 2i rotates with 2i+1
};

}  // namespace tessera
