// Chained hashes of full KV blocks for automatic prefix caching:
//   hash(block i) = H(hash(block i - 1), token ids of block i, extra keys)
// so equal hashes mean equal whole prefixes, not just equal blocks. H is a keyed 128-bit
// hash (random key per process): collisions are ~2^-64 per pair even for chosen inputs,
// since the key is unknown to clients.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace tessera {

struct BlockHash {
  uint64_t hi = 0;
  uint64_t lo = 0;
  bool operator==(const BlockHash&) const = default;
};

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const noexcept { return static_cast<size_t>(h.lo ^ (h.hi * 0x9e3779b97f4a7c15ULL)); }
};

// Keys that make equal tokens differ in cache: a cache salt, a LoRA adapter, ... (each
// already reduced to 64 bits by the caller, e.g. with hash_bytes).
using ExtraKeys = std::span<const uint64_t>;

// The hash of one block given its parent's (nullptr for the first block).
BlockHash hash_block(const BlockHash* parent, std::span<const int32_t> tokens, ExtraKeys extra_keys);

// Appends to `hashes` the hashes of the full blocks of `tokens` not hashed yet
// (hashes->size() of them already are): block_size tokens each.
void extend_block_hashes(std::span<const int32_t> tokens, int32_t block_size, ExtraKeys extra_keys,
                         std::vector<BlockHash>* hashes);

// 64-bit keyed hash of bytes (for extra keys such as a cache salt).
uint64_t hash_bytes(std::span<const unsigned char> bytes);

}  // namespace tessera
