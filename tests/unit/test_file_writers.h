// Test-only writers of small GGUF and safetensors files, with knobs to corrupt them, plus
// temp-dir and shared-data helpers for the loader tests.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::test {

using Bytes = std::vector<std::byte>;

inline std::span<const std::byte> as_span(const Bytes& b) { return {b.data(), b.size()}; }

// Little-endian byte building.
inline void put_raw(Bytes& out, const void* p, size_t n) {
  if (n == 0) return;
  const auto* b = static_cast<const std::byte*>(p);
  out.insert(out.end(), b, b + n);
}
template <typename T>
void put(Bytes& out, T v) {
  put_raw(out, &v, sizeof(v));
}
inline void put_gguf_string(Bytes& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  put_raw(out, s.data(), s.size());
}
template <typename T>
Bytes pod_bytes(const std::vector<T>& v) {
  Bytes out;
  put_raw(out, v.data(), v.size() * sizeof(T));
  return out;
}
inline Bytes pattern_bytes(size_t n, uint8_t seed = 1) {
  Bytes out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>((i * 31 + seed) & 0xff);
  return out;
}

// GGUF value type ids (as in the spec, independent of the parser's enum).
enum GgufTypeId : uint32_t {
  kGgufU8 = 0, kGgufI8 = 1, kGgufU16 = 2, kGgufI16 = 3, kGgufU32 = 4, kGgufI32 = 5,
  kGgufF32 = 6, kGgufBool = 7, kGgufString = 8, kGgufArray = 9, kGgufU64 = 10,
  kGgufI64 = 11, kGgufF64 = 12,
};

// Encoded array body (element type, count, elements), for kv values and nested arrays.
inline Bytes gguf_array(uint32_t elem_type, uint64_t count, const Bytes& elements) {
  Bytes out;
  put<uint32_t>(out, elem_type);
  put<uint64_t>(out, count);
  put_raw(out, elements.data(), elements.size());
  return out;
}
template <typename T>
Bytes gguf_pod_array(uint32_t elem_type, const std::vector<T>& v) {
  return gguf_array(elem_type, v.size(), pod_bytes(v));
}
inline Bytes gguf_string_array(const std::vector<std::string>& v) {
  Bytes elems;
  for (const auto& s : v) put_gguf_string(elems, s);
  return gguf_array(kGgufString, v.size(), elems);
}

class GgufWriter {
 public:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;  // innermost first, as in the file
    uint32_t ggml_type;
    Bytes data;
    std::optional<uint64_t> offset;  // default: packed at `alignment`; if set, data is not written
    std::optional<uint32_t> n_dims;  // default: ne.size()
  };

  char magic[4] = {'G', 'G', 'U', 'F'};
  uint32_t version = 3;
  uint64_t alignment = 32;  // used for layout; write general.alignment yourself to change it
  std::optional<uint64_t> tensor_count;  // overrides the real counts
  std::optional<uint64_t> kv_count;
  std::vector<Tensor> tensors;

  // A raw kv: type id and encoded value.
  void kv(const std::string& key, uint32_t type, Bytes value) {
    kvs_.push_back({key, type, std::move(value)});
  }
  template <typename T>
  void kv_pod(const std::string& key, uint32_t type, T v) {
    Bytes b;
    put(b, v);
    kv(key, type, std::move(b));
  }
  void kv_u32(const std::string& key, uint32_t v) { kv_pod(key, kGgufU32, v); }
  void kv_f32(const std::string& key, float v) { kv_pod(key, kGgufF32, v); }
  void kv_bool(const std::string& key, bool v) { kv_pod<uint8_t>(key, kGgufBool, v ? 1 : 0); }
  void kv_string(const std::string& key, const std::string& v) {
    Bytes b;
    put_gguf_string(b, v);
    kv(key, kGgufString, std::move(b));
  }
  void kv_array(const std::string& key, Bytes body) { kv(key, kGgufArray, std::move(body)); }

  void tensor(std::string name, std::vector<uint64_t> ne, uint32_t ggml_type, Bytes data) {
    tensors.push_back({std::move(name), std::move(ne), ggml_type, std::move(data), {}, {}});
  }

  Bytes build() const {
    Bytes out;
    put_raw(out, magic, 4);
    put<uint32_t>(out, version);
    put<uint64_t>(out, tensor_count.value_or(tensors.size()));
    put<uint64_t>(out, kv_count.value_or(kvs_.size()));
    for (const auto& kv : kvs_) {
      put_gguf_string(out, kv.key);
      put<uint32_t>(out, kv.type);
      put_raw(out, kv.value.data(), kv.value.size());
    }
    std::vector<uint64_t> offsets;
    uint64_t next = 0;
    for (const auto& t : tensors) {
      const uint64_t off = t.offset.value_or(next);
      offsets.push_back(off);
      if (!t.offset) next = align(off + t.data.size());
      put_gguf_string(out, t.name);
      put<uint32_t>(out, t.n_dims.value_or(static_cast<uint32_t>(t.ne.size())));
      for (uint64_t d : t.ne) put<uint64_t>(out, d);
      put<uint32_t>(out, t.ggml_type);
      put<uint64_t>(out, off);
    }
    if (tensors.empty()) return out;
    out.resize(align(out.size()));
    const size_t data_start = out.size();
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].offset || tensors[i].data.empty()) continue;
      const auto& d = tensors[i].data;
      if (data_start + offsets[i] + d.size() > out.size()) {
        out.resize(data_start + offsets[i] + d.size());
      }
      std::memcpy(out.data() + data_start + offsets[i], d.data(), d.size());
    }
    return out;  // no padding after the last tensor: every shorter prefix is invalid
  }

 private:
  struct Kv {
    std::string key;
    uint32_t type;
    Bytes value;
  };
  uint64_t align(uint64_t n) const { return (n + alignment - 1) / alignment * alignment; }
  std::vector<Kv> kvs_;
};

// Builds "8-byte length + JSON header + data" (header padded with spaces to 8 bytes, as
// the reference writer does).
inline Bytes safetensors_bytes(const std::string& header, const Bytes& data,
                               std::optional<uint64_t> header_len = std::nullopt) {
  std::string h = header;
  while ((8 + h.size()) % 8 != 0) h += ' ';
  Bytes out;
  put<uint64_t>(out, header_len.value_or(h.size()));
  put_raw(out, h.data(), h.size());
  put_raw(out, data.data(), data.size());
  return out;
}

class SafetensorsWriter {
 public:
  std::map<std::string, std::string> metadata;

  void tensor(const std::string& name, const std::string& dtype, std::vector<int64_t> shape,
              const Bytes& data) {
    header_[name] = {{"dtype", dtype}, {"shape", shape},
                     {"data_offsets", {data_.size(), data_.size() + data.size()}}};
    data_.insert(data_.end(), data.begin(), data.end());
  }
  nlohmann::json header() const {
    nlohmann::json h = header_;
    if (!metadata.empty()) h["__metadata__"] = metadata;
    return h;
  }
  Bytes build() const { return safetensors_bytes(header().dump(), data_); }
  const Bytes& data() const { return data_; }

 private:
  nlohmann::json header_ = nlohmann::json::object();
  Bytes data_;
};

// A fresh directory under $TMPDIR (or /tmp), removed with its files on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tessera-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    for (const auto& f : files_) ::unlink(f.c_str());
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) ::rmdir(it->c_str());
    if (!path_.empty()) ::rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string write(const std::string& name, const Bytes& bytes) {
    return write(name, std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary).write(text.data(), static_cast<std::streamsize>(text.size()));
    files_.push_back(p);
    return p;
  }
  std::string mkdir(const std::string& name) {
    const std::string p = path_ + "/" + name;
    ::mkdir(p.c_str(), 0755);
    dirs_.push_back(p);
    return p;
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
  std::vector<std::string> dirs_;
};

inline bool path_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// The shared test data: $TESSERA_SHARED_DATA (set by ctest), else ../shared/data beside
// the source tree, found from this file's path or the working directory.
inline std::optional<std::string> shared_data_dir() {
  if (const char* env = std::getenv("TESSERA_SHARED_DATA"); env && *env && path_exists(env)) {
    return std::string(env);
  }
  std::string here = __FILE__;  // <root>/tests/unit/test_file_writers.h
  here = here.substr(0, here.find_last_of('/') + 1);
  for (const std::string& c : {here + "../../../shared/data", std::string("../shared/data"),
                               std::string("../../shared/data"), std::string("../../../shared/data")}) {
    if (path_exists(c + "/models")) return c;
  }
  return std::nullopt;
}

}  // namespace tessera::test
