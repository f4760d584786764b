#include "loader/safetensors.h"

#include <sys/stat.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "common/mmap_file.h"

namespace tessera {
namespace {

using Json = nlohmann::json;

static_assert(std::endian::native == std::endian::little, "the loaders read little-endian data");

// The reference implementation caps the header at 100 MB; real headers are a few hundred KB.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;
// Valid headers nest 3 deep ({name: {shape: [..]}}); the index 2 deep.
constexpr int kMaxJsonDepth = 8;
// Real tensors have at most 5 dims; the cap keeps hostile shapes small.
constexpr size_t kMaxDims = 8;

class JsonLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses JSON, rejecting duplicate keys (nlohmann keeps the last silently, which would hide
// a tensor listed twice) and deep nesting.
Result<Json> parse_json_strict(std::string_view text, const std::string& source, const char* what) {
  std::vector<std::unordered_set<std::string>> open_objects;
  auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) -> bool {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth) {
          throw JsonLimitError("nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        }
        if (event == Json::parse_event_t::object_start) open_objects.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case Json::parse_event_t::key: {
        const auto& key = parsed.get_ref<const std::string&>();
        if (!open_objects.empty() && !open_objects.back().insert(key).second) {
          throw JsonLimitError("duplicate key " + quote_untrusted(key));
        }
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), callback);
  } catch (const JsonLimitError& e) {
    return Status::error(source + ": " + what + ": " + e.what());
  } catch (const Json::exception& e) {
    return Status::error(source + ": " + what + " is not valid JSON: " + e.what());
  }
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  return std::nullopt;
}

// A JSON number that is a non-negative integer, as uint64.
std::optional<uint64_t> json_uint(const Json& j) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer() && j.get<int64_t>() >= 0) return static_cast<uint64_t>(j.get<int64_t>());
  return std::nullopt;
}

std::string offsets_string(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

Result<TensorView> parse_tensor_entry(const std::string& name, const Json& entry,
                                      std::span<const std::byte> bytes, size_t data_offset,
                                      const std::string& source) {
  const std::string where = source + ": tensor " + quote_untrusted(name);
  if (!entry.is_object()) return Status::error(where + ": entry is not a JSON object");
  const auto dtype_it = entry.find("dtype");
  const auto shape_it = entry.find("shape");
  const auto offsets_it = entry.find("data_offsets");
  if (dtype_it == entry.end() || !dtype_it->is_string()) {
    return Status::error(where + ": missing or non-string \"dtype\"");
  }
  if (shape_it == entry.end() || !shape_it->is_array()) {
    return Status::error(where + ": missing or non-array \"shape\"");
  }
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
    return Status::error(where + ": \"data_offsets\" must be an array [begin, end]");
  }
  const auto& dtype_name = dtype_it->get_ref<const std::string&>();
  const std::optional<DType> dtype = parse_dtype(dtype_name);
  if (!dtype) {
    return Status::error(where + " has dtype " + quote_untrusted(dtype_name) +
                         ", which is not supported (supported: F32, F16, BF16)");
  }

  TensorView view;
  view.dtype = *dtype;
  if (shape_it->size() > kMaxDims) {
    return Status::error(where + ": shape " + shape_it->dump() + " has more than " +
                         std::to_string(kMaxDims) + " dimensions");
  }
  uint64_t numel = 1;
  // The product with zero dims counted as 1 must fit too: code that multiplies some of the
  // dims of an empty tensor must not overflow either.
  uint64_t bound = 1;
  for (const Json& dim : *shape_it) {
    const std::optional<uint64_t> d = json_uint(dim);
    if (!d || *d > static_cast<uint64_t>(INT64_MAX)) {
      return Status::error(where + ": shape " + dim.dump() +
                           " is not a non-negative integer (shape " + shape_it->dump() + ")");
    }
    if (__builtin_mul_overflow(bound, std::max<uint64_t>(*d, 1), &bound) ||
        bound > static_cast<uint64_t>(INT64_MAX)) {
      return Status::error(where + ": shape " + shape_it->dump() + " has too many elements");
    }
    numel *= *d;  // <= bound
    view.shape.push_back(static_cast<int64_t>(*d));
  }
  const auto elem_bytes = static_cast<uint64_t>(dtype_info(*dtype).block_bytes);
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, elem_bytes, &nbytes)) {
    return Status::error(where + ": shape " + shape_it->dump() + " has too many bytes");
  }

  const std::optional<uint64_t> begin = json_uint((*offsets_it)[0]);
  const std::optional<uint64_t> end = json_uint((*offsets_it)[1]);
  if (!begin || !end) {
    return Status::error(where + " data_offsets " + offsets_it->dump() +
                         " are not non-negative integers");
  }
  const uint64_t data_size = bytes.size() - data_offset;
  if (*begin > *end) {
    return Status::error(where + " data_offsets " + offsets_string(*begin, *end) +
                         " end before they begin");
  }
  if (*end > data_size) {
    return Status::error(where + " data_offsets " + offsets_string(*begin, *end) +
                         " exceed data size " + std::to_string(data_size));
  }
  if (*end - *begin != nbytes) {
    return Status::error(where + " data_offsets " + offsets_string(*begin, *end) + " hold " +
                         std::to_string(*end - *begin) + " bytes but " + dtype_name + " " +
                         shape_it->dump() + " needs " + std::to_string(nbytes));
  }
  // Kernels read weights in place through typed pointers.
  const uint64_t file_offset = data_offset + *begin;
  if (file_offset % elem_bytes != 0) {
    return Status::error(where + " data starts at file offset " + std::to_string(file_offset) +
                         ", not a multiple of its " + std::to_string(elem_bytes) +
                         "-byte element size");
  }
  view.data = bytes.data() + file_offset;
  view.nbytes = static_cast<size_t>(nbytes);
  return view;
}

}  // namespace

Result<SafetensorsTable> parse_safetensors(std::span<const std::byte> bytes,
                                           const std::string& source_name) {
  const std::string& src = source_name;
  if (bytes.size() < 8) {
    return Status::error(src + ": file is " + std::to_string(bytes.size()) +
                         " bytes, too small for a safetensors header");
  }
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > kMaxHeaderBytes) {
    return Status::error(src + ": header length " + std::to_string(header_len) +
                         " exceeds the limit of " + std::to_string(kMaxHeaderBytes) + " bytes");
  }
  if (header_len > bytes.size() - 8) {
    return Status::error(src + ": header length " + std::to_string(header_len) +
                         " exceeds the file size " + std::to_string(bytes.size()));
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes.data()) + 8, header_len);
  Result<Json> parsed = parse_json_strict(header, src, "header");
  TESSERA_RETURN_IF_ERROR(parsed);
  const Json& json = parsed.value();
  if (!json.is_object()) return Status::error(src + ": header is not a JSON object");

  SafetensorsTable table;
  table.data_offset = 8 + header_len;
  table.tensors.reserve(json.size());
  for (const auto& [name, entry] : json.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) return Status::error(src + ": __metadata__ is not a JSON object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          return Status::error(src + ": __metadata__ value " + quote_untrusted(key) +
                               " is not a string");
        }
        table.metadata.emplace(key, value.get<std::string>());
      }
      continue;
    }
    Result<TensorView> view = parse_tensor_entry(name, entry, bytes, table.data_offset, src);
    TESSERA_RETURN_IF_ERROR(view);
    table.tensors.emplace_back(name, std::move(view.value()));
  }
  // File order, so that a pass over the tensors reads the file sequentially.
  std::stable_sort(table.tensors.begin(), table.tensors.end(),
                   [](const auto& a, const auto& b) { return a.second.data < b.second.data; });
  return table;
}

namespace {

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string parent_dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

class SafetensorsStore final : public WeightStore {
 public:
  explicit SafetensorsStore(std::string source) : source_(std::move(source)) {}

  const TensorView* find(std::string_view name) const override {
    const auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    out.reserve(tensors_.size());
    for (const auto& [name, view] : tensors_) out.push_back(name);
    return out;
  }
  std::string source() const override { return source_; }

  // Maps `path` and adds its tensors; `expected`, when given, lists the names the index
  // assigns to this shard, all of which must be in it.
  Status add_file(const std::string& path, const std::vector<std::string>* expected) {
    Result<MappedFile> file = MappedFile::open(path);
    TESSERA_RETURN_IF_ERROR(file);
    files_.push_back(std::move(file.value()));
    const MappedFile& mapped = files_.back();
    Result<SafetensorsTable> table = parse_safetensors(mapped.bytes(), path);
    TESSERA_RETURN_IF_ERROR(table);
    for (auto& [name, view] : table->tensors) {
      const auto [it, inserted] = tensors_.emplace(name, std::move(view));
      if (!inserted) {
        return Status::error(path + ": tensor " + quote_untrusted(name) +
                             " is also in another shard of " + source_);
      }
    }
    if (expected != nullptr) {
      std::unordered_set<std::string_view> here;
      for (const auto& [name, view] : table->tensors) here.insert(name);
      for (const std::string& name : *expected) {
        if (here.count(name) == 0) {
          return Status::error(path + ": tensor " + quote_untrusted(name) +
                               " is listed in the index but missing from this shard");
        }
      }
    }
    return Status();
  }

 private:
  std::string source_;
  std::vector<MappedFile> files_;  // MappedFile moves keep the mapping, so views stay valid
  std::map<std::string, TensorView, std::less<>> tensors_;
};

Result<std::unique_ptr<WeightStore>> open_index(const std::string& index_path) {
  Result<MappedFile> file = MappedFile::open(index_path);
  TESSERA_RETURN_IF_ERROR(file);
  const std::string_view text(reinterpret_cast<const char*>(file->data()), file->size());
  Result<Json> parsed = parse_json_strict(text, index_path, "index");
  TESSERA_RETURN_IF_ERROR(parsed);
  const Json& json = parsed.value();
  if (!json.is_object()) return Status::error(index_path + ": index is not a JSON object");
  const auto map_it = json.find("weight_map");
  if (map_it == json.end() || !map_it->is_object()) {
    return Status::error(index_path + ": missing or non-object \"weight_map\"");
  }
  if (map_it->empty()) return Status::error(index_path + ": \"weight_map\" is empty");

  // Shards in order of first mention, each with the tensors the index puts there.
  std::vector<std::pair<std::string, std::vector<std::string>>> shards;
  std::map<std::string, size_t, std::less<>> shard_idx;
  for (const auto& [name, shard] : map_it->items()) {
    if (!shard.is_string()) {
      return Status::error(index_path + ": weight_map entry " + quote_untrusted(name) +
                           " is not a file name");
    }
    const auto& shard_name = shard.get_ref<const std::string&>();
    // A shard is a file beside the index; anything else could read outside the model.
    if (shard_name.empty() || shard_name == "." || shard_name == ".." ||
        shard_name.find('/') != std::string::npos || shard_name.find('\0') != std::string::npos) {
      return Status::error(index_path + ": weight_map entry " + quote_untrusted(name) +
                           " names shard " + quote_untrusted(shard_name) +
                           ", which is not a plain file name");
    }
    auto [it, inserted] = shard_idx.emplace(shard_name, shards.size());
    if (inserted) shards.emplace_back(shard_name, std::vector<std::string>{});
    shards[it->second].second.push_back(name);
  }

  const std::string dir = parent_dir(index_path);
  auto store = std::make_unique<SafetensorsStore>(index_path);
  for (const auto& [shard_name, expected] : shards) {
    TESSERA_RETURN_IF_ERROR(store->add_file(dir + "/" + shard_name, &expected));
  }
  return std::unique_ptr<WeightStore>(std::move(store));
}

}  // namespace

Result<std::unique_ptr<WeightStore>> open_safetensors(const std::string& path) {
  if (is_directory(path)) {
    const std::string single = path + "/model.safetensors";
    const std::string index = path + "/model.safetensors.index.json";
    if (exists(single)) return open_safetensors(single);
    if (exists(index)) return open_index(index);
    return Status::error(path + ": directory holds neither model.safetensors nor "
                                "model.safetensors.index.json");
  }
  if (ends_with(path, ".index.json")) return open_index(path);
  auto store = std::make_unique<SafetensorsStore>(path);
  TESSERA_RETURN_IF_ERROR(store->add_file(path, nullptr));
  return std::unique_ptr<WeightStore>(std::move(store));
}

}  // namespace tessera
