// libFuzzer target: GgufFile::parse on arbitrary bytes must fail cleanly or return values
// and tensor views that lie inside the input.
#include <cstddef>
#include <cstdint>
#include <span>

#include "loader/gguf.h"

namespace {

volatile unsigned g_sink = 0;

void touch(const tessera::GgufValue& v) {
  for (char c : v.debug_string(3)) g_sink = g_sink + static_cast<unsigned char>(c);
  if (auto s = v.to_string()) {
    for (char c : *s) g_sink = g_sink + static_cast<unsigned char>(c);
  }
  if (!v.is_array()) return;
  if (auto a = v.to_int_array()) g_sink = g_sink + a->size();
  if (auto a = v.to_float_array()) g_sink = g_sink + a->size();
  if (auto a = v.to_string_array()) {
    for (std::string_view s : *a) {
      for (char c : s) g_sink = g_sink + static_cast<unsigned char>(c);
    }
  }
  for (size_t i = 0; i < v.size(); ++i) touch(v.at(i));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto file = tessera::GgufFile::parse(bytes, "fuzz.gguf");
  if (!file.ok()) return 0;
  const tessera::GgufFile& f = **file;
  for (std::string_view key : f.keys()) {
    const tessera::GgufValue* v = f.get(key);
    if (v == nullptr) __builtin_trap();
    touch(*v);
    (void)f.get_int(key);
    (void)f.get_float(key);
  }
  for (const auto& t : f.tensors()) {
    if (f.find(t.name) != &t.view) __builtin_trap();
    // Every byte of every tensor: ASan flags any view outside the input.
    for (size_t i = 0; i < t.view.nbytes; ++i) g_sink = g_sink + static_cast<unsigned>(t.view.data[i]);
    if (t.view.numel() > 0 && t.view.cols() > 0 && t.view.rows() > 0) {
      const std::byte* last_row = t.view.row(t.view.rows() - 1);
      if (last_row + tessera::row_bytes(t.view.dtype, t.view.cols()) != t.view.data + t.view.nbytes) {
        __builtin_trap();
      }
    }
  }
  return 0;
}
