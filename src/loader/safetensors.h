// safetensors checkpoints: one file, a directory with model.safetensors, or a sharded
// directory described by model.safetensors.index.json. Tensors are views into the mmap.
//
// Format: an 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}},
// then the data area; offsets are relative to the data area.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "loader/weight_store.h"

namespace tessera {

struct SafetensorsTable {
  // In file order (by data offset); each view points into the parsed bytes.
  std::vector<std::pair<std::string, TensorView>> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__" (string values only)
  size_t data_offset = 0;                       // where the data area starts (8 + N)
};

// Parses and validates a whole safetensors file held in memory. The views point into
// `bytes`, which must outlive them. Supported dtypes: F32, F16, BF16. Every tensor's data
// is aligned to its element size relative to bytes.data(). Errors start with source_name.
Result<SafetensorsTable> parse_safetensors(std::span<const std::byte> bytes,
                                           const std::string& source_name);

// Opens `path`: a .safetensors file, a *.index.json, or a directory holding
// model.safetensors (preferred) or model.safetensors.index.json. Shards must be plain file
// names beside the index and are mapped once each; a tensor named in the index but missing
// from its shard, or present in two shards, is an error. names() is sorted.
Result<std::unique_ptr<WeightStore>> open_safetensors(const std::string& path);

}  // namespace tessera
