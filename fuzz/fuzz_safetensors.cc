// libFuzzer target: parse_safetensors on arbitrary bytes must fail cleanly or return views
// that lie inside the input.
#include <cstddef>
#include <cstdint>
#include <span>

#include "loader/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto table = tessera::parse_safetensors(bytes, "fuzz.safetensors");
  if (!table.ok()) return 0;
  // Touch every byte of every tensor: ASan flags any view outside the input.
  volatile unsigned sink = 0;
  for (const auto& [name, view] : table->tensors) {
    if (view.nbytes != static_cast<size_t>(view.numel()) * tessera::dtype_info(view.dtype).block_bytes) {
      __builtin_trap();
    }
    for (size_t i = 0; i < view.nbytes; ++i) sink = sink + static_cast<unsigned>(view.data[i]);
  }
  for (const auto& [key, value] : table->metadata) sink = sink + key.size() + value.size();
  return 0;
}
