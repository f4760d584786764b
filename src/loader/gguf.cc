#include "loader/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace tessera {
namespace {

constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
// Smallest possible entries, to bound counts by what the file could hold.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;               // key length, type, u8 value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // name length, n_dims, ne[0], type, offset

// Kernels read weights in place: F32/I32 through 4-byte loads, the rest (F16/BF16 and the
// fp16 scales of quantized blocks) through 2-byte loads.
uint64_t natural_alignment(DType t) {
  return (t == DType::kF32 || t == DType::kI32) ? 4 : 2;
}

}  // namespace

Result<std::unique_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  Result<MappedFile> mapped = MappedFile::open(path);
  TESSERA_RETURN_IF_ERROR(mapped);
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->source_ = path;
  file->mapping_ = std::move(mapped.value());
  TESSERA_RETURN_IF_ERROR(file->parse_bytes(file->mapping_.bytes()));
  return file;
}

Result<std::unique_ptr<GgufFile>> GgufFile::parse(std::span<const std::byte> bytes,
                                                  const std::string& source_name) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->source_ = source_name;
  TESSERA_RETURN_IF_ERROR(file->parse_bytes(bytes));
  return file;
}

Status GgufFile::parse_bytes(std::span<const std::byte> bytes) {
  const std::string& src = source_;
  if (bytes.size() < 4) {
    return Status::error(src + ": file is " + std::to_string(bytes.size()) +
                         " bytes, too small for a GGUF header");
  }
  if (std::memcmp(bytes.data(), "GGUF", 4) != 0) {
    return Status::error(src + ": not a GGUF file (magic " +
                         quote_untrusted({reinterpret_cast<const char*>(bytes.data()), 4}) +
                         ", expected 'GGUF')");
  }
  GgufReader reader(bytes, 4);
  const auto fail = [&](const std::string& what, const Status& s) {
    return Status::error(src + ": " + what + ": " + s.message());
  };
  uint64_t tensor_count = 0;
  uint64_t kv_count = 0;
  Status s = reader.read_u32(version_, "version");
  if (s.ok()) s = reader.read_u64(tensor_count, "tensor count");
  if (s.ok()) s = reader.read_u64(kv_count, "metadata count");
  if (!s.ok()) return fail("header", s);
  if (version_ != 2 && version_ != 3) {
    const uint32_t swapped = __builtin_bswap32(version_);
    std::string hint = version_ == 1 ? " (version 1 predates 64-bit counts)" : "";
    if (swapped == 2 || swapped == 3) hint = " (a big-endian GGUF file?)";
    return Status::error(src + ": GGUF version " + std::to_string(version_) +
                         " is not supported (only 2 and 3)" + hint);
  }
  if (kv_count > reader.remaining() / kMinKvBytes) {
    return Status::error(src + ": header claims " + std::to_string(kv_count) +
                         " metadata entries but the file has room for at most " +
                         std::to_string(reader.remaining() / kMinKvBytes));
  }
  if (tensor_count > reader.remaining() / kMinTensorInfoBytes) {
    return Status::error(src + ": header claims " + std::to_string(tensor_count) +
                         " tensors but the file has room for at most " +
                         std::to_string(reader.remaining() / kMinTensorInfoBytes));
  }

  kvs_.reserve(kv_count);
  kv_idx_.reserve(kv_count);
  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string_view key;
    uint32_t type = 0;
    s = reader.read_string(key, "key");
    if (s.ok()) s = reader.read_u32(type, "value type");
    if (!s.ok()) {
      return fail("metadata entry " + std::to_string(i) + " of " + std::to_string(kv_count), s);
    }
    GgufValue value;
    s = reader.read_value(type, value);
    if (!s.ok()) return fail("metadata " + quote_untrusted(key), s);
    if (!kv_idx_.emplace(key, kvs_.size()).second) {
      return Status::error(src + ": metadata key " + quote_untrusted(key) + " appears twice");
    }
    kvs_.emplace_back(key, std::move(value));
  }

  if (const GgufValue* a = get("general.alignment")) {
    const std::optional<int64_t> v = a->to_int();
    if (!v || *v <= 0 || !std::has_single_bit(static_cast<uint64_t>(*v))) {
      return Status::error(src + ": general.alignment is " + a->debug_string() +
                           ", not a power of two");
    }
    alignment_ = static_cast<uint64_t>(*v);
  }

  tensors_.reserve(tensor_count);
  tensor_idx_.reserve(tensor_count);
  for (uint64_t i = 0; i < tensor_count; ++i) {
    TESSERA_RETURN_IF_ERROR(parse_tensor_info(reader, i, tensor_count));
  }
  const uint64_t header_end = reader.pos();
  data_offset_ = (header_end + alignment_ - 1) / alignment_ * alignment_;
  return place_tensors(bytes);
}

Status GgufFile::parse_tensor_info(GgufReader& reader, uint64_t idx, uint64_t count) {
  const std::string& src = source_;
  GgufTensorInfo info;
  uint32_t n_dims = 0;
  Status s = reader.read_string(info.name, "tensor name");
  if (!s.ok()) {
    return Status::error(src + ": tensor info " + std::to_string(idx) + " of " +
                         std::to_string(count) + ": " + s.message());
  }
  const std::string where = src + ": tensor " + quote_untrusted(info.name);
  s = reader.read_u32(n_dims, "n_dims");
  if (!s.ok()) return Status::error(where + ": " + s.message());
  if (n_dims < 1 || n_dims > kMaxDims) {
    return Status::error(where + " has " + std::to_string(n_dims) + " dimensions (must be 1 to " +
                         std::to_string(kMaxDims) + ")");
  }
  uint64_t ne[kMaxDims] = {1, 1, 1, 1};
  for (uint32_t d = 0; d < n_dims; ++d) {
    s = reader.read_u64(ne[d], "ne");
    if (!s.ok()) return Status::error(where + ": " + s.message());
  }
  s = reader.read_u32(info.ggml_type, "ggml type");
  if (s.ok()) s = reader.read_u64(info.offset, "data offset");
  if (!s.ok()) return Status::error(where + ": " + s.message());

  std::string ne_str = "[";
  for (uint32_t d = 0; d < n_dims; ++d) ne_str += (d ? ", " : "") + std::to_string(ne[d]);
  ne_str += "]";
  const std::optional<DType> dtype = dtype_from_ggml_type(info.ggml_type);
  if (!dtype) {
    return Status::error(where + " has ggml type " + std::to_string(info.ggml_type) + " (" +
                         std::string(ggml_type_name(info.ggml_type)) +
                         "), which Tessera does not support");
  }
  const DTypeInfo& dt = dtype_info(*dtype);
  uint64_t numel = 1;
  uint64_t bound = 1;  // zero dims counted as 1: partial products of any dims fit in int64
  for (uint32_t d = 0; d < n_dims; ++d) {
    if (__builtin_mul_overflow(bound, std::max<uint64_t>(ne[d], 1), &bound) ||
        bound > static_cast<uint64_t>(INT64_MAX)) {
      return Status::error(where + ": ne " + ne_str + " has too many elements");
    }
    numel *= ne[d];  // <= bound
  }
  if (ne[0] % static_cast<uint64_t>(dt.block_size) != 0) {
    return Status::error(where + ": ne[0] = " + std::to_string(ne[0]) +
                         " is not a multiple of the " + std::string(dt.name) + " block size " +
                         std::to_string(dt.block_size));
  }
  // numel fits in int64 and each row holds at most block_bytes bytes per block_size
  // elements, so only the multiply by block_bytes can overflow.
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel / static_cast<uint64_t>(dt.block_size),
                             static_cast<uint64_t>(dt.block_bytes), &nbytes)) {
    return Status::error(where + ": ne " + ne_str + " has too many bytes");
  }
  if (info.offset % alignment_ != 0) {
    return Status::error(where + ": data offset " + std::to_string(info.offset) +
                         " is not a multiple of the alignment " + std::to_string(alignment_));
  }
  info.view.dtype = *dtype;
  for (uint32_t d = n_dims; d-- > 0;) info.view.shape.push_back(static_cast<int64_t>(ne[d]));
  info.view.nbytes = static_cast<size_t>(nbytes);
  if (!tensor_idx_.emplace(info.name, tensors_.size()).second) {
    return Status::error(where + " appears twice");
  }
  tensors_.push_back(std::move(info));
  return Status();
}

Status GgufFile::place_tensors(std::span<const std::byte> bytes) {
  if (tensors_.empty()) return Status();  // vocab-only files may end without padding
  const uint64_t size = bytes.size();
  if (data_offset_ > size) {
    return Status::error(source_ + ": data area would start at offset " +
                         std::to_string(data_offset_) + ", past the end of the file (" +
                         std::to_string(size) + " bytes)");
  }
  const uint64_t data_size = size - data_offset_;
  for (GgufTensorInfo& t : tensors_) {
    const uint64_t nbytes = t.view.nbytes;
    if (t.offset > data_size || nbytes > data_size - t.offset) {
      return Status::error(source_ + ": tensor " + quote_untrusted(t.name) + " data [" +
                           std::to_string(t.offset) + ", +" + std::to_string(nbytes) +
                           ") lies outside the data area (" + std::to_string(data_size) +
                           " bytes)");
    }
    const uint64_t file_offset = data_offset_ + t.offset;
    const uint64_t natural = natural_alignment(t.view.dtype);
    if (file_offset % natural != 0) {
      return Status::error(source_ + ": tensor " + quote_untrusted(t.name) +
                           " data starts at file offset " + std::to_string(file_offset) +
                           ", not a multiple of " + std::to_string(natural));
    }
    t.view.data = bytes.data() + file_offset;
  }
  return Status();
}

const TensorView* GgufFile::find(std::string_view name) const {
  const GgufTensorInfo* info = find_info(name);
  return info ? &info->view : nullptr;
}

const GgufTensorInfo* GgufFile::find_info(std::string_view name) const {
  const auto it = tensor_idx_.find(name);
  return it == tensor_idx_.end() ? nullptr : &tensors_[it->second];
}

std::vector<std::string> GgufFile::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const GgufTensorInfo& t : tensors_) out.emplace_back(t.name);
  return out;
}

std::vector<std::string_view> GgufFile::keys() const {
  std::vector<std::string_view> out;
  out.reserve(kvs_.size());
  for (const auto& kv : kvs_) out.push_back(kv.first);
  return out;
}

const GgufValue* GgufFile::get(std::string_view key) const {
  const auto it = kv_idx_.find(key);
  return it == kv_idx_.end() ? nullptr : &kvs_[it->second].second;
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = get(key);
  return v ? v->to_int() : std::nullopt;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = get(key);
  return v ? v->to_float() : std::nullopt;
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = get(key);
  return v ? v->to_bool() : std::nullopt;
}

std::optional<std::string_view> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = get(key);
  return v ? v->to_string() : std::nullopt;
}

std::optional<std::vector<std::string_view>> GgufFile::get_string_array(
    std::string_view key) const {
  const GgufValue* v = get(key);
  return v ? v->to_string_array() : std::nullopt;
}

std::optional<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue* v = get(key);
  return v ? v->to_int_array() : std::nullopt;
}

std::optional<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  const GgufValue* v = get(key);
  return v ? v->to_float_array() : std::nullopt;
}

}  // namespace tessera
