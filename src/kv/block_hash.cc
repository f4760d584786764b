#include "kv/block_hash.h"

#include <random>

namespace tessera {
namespace {

// Per-process random key: clients cannot aim for collisions they cannot compute.
struct HashKey {
  uint64_t k0, k1;
  HashKey() {
    std::random_device rd;
    k0 = (uint64_t{rd()} << 32) ^ rd();
    k1 = (uint64_t{rd()} << 32) ^ rd();
  }
};
const HashKey& key() {
  static const HashKey k;
  return k;
}

// 64x64 -> 128 multiply folded to 64 bits: the mixing step of a fast keyed hash.
inline uint64_t fold_mul(uint64_t a, uint64_t b) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
}

// Two independent lanes give 128 bits; each word is absorbed with a length-dependent
// constant so that reordering or truncation changes the result.
struct Hasher128 {
  uint64_t a, b;
  uint64_t n = 0;
  explicit Hasher128(uint64_t seed) : a(key().k0 ^ seed), b(key().k1 ^ (seed * 0x9e3779b97f4a7c15ULL)) {}
  void absorb(uint64_t w) {
    ++n;
    a = fold_mul(a ^ w, 0xa0761d6478bd642fULL + n);
    b = fold_mul(b + w, 0xe7037ed1a0b428dbULL ^ (n << 1));
  }
  BlockHash finish() {
    absorb(n);
    return {fold_mul(a, 0x8ebc6af09c88c6e3ULL) ^ b, fold_mul(b, 0x589965cc75374cc3ULL) ^ a};
  }
};

}  // namespace

BlockHash hash_block(const BlockHash* parent, std::span<const int32_t> tokens, ExtraKeys extra_keys) {
  Hasher128 h(0x424c4f434bULL);  // "BLOCK"
  h.absorb(parent != nullptr ? 1 : 0);
  if (parent != nullptr) {
    h.absorb(parent->hi);
    h.absorb(parent->lo);
  }
  h.absorb(tokens.size());
  for (size_t i = 0; i < tokens.size(); i += 2) {
    const uint64_t lo = static_cast<uint32_t>(tokens[i]);
    const uint64_t hi = i + 1 < tokens.size() ? static_cast<uint32_t>(tokens[i + 1]) : 0;
    h.absorb(lo | hi << 32);
  }
  h.absorb(extra_keys.size());
  for (uint64_t k : extra_keys) h.absorb(k);
  return h.finish();
}

void extend_block_hashes(std::span<const int32_t> tokens, int32_t block_size, ExtraKeys extra_keys,
                         std::vector<BlockHash>* hashes) {
  const size_t num_full = tokens.size() / static_cast<size_t>(block_size);
  for (size_t i = hashes->size(); i < num_full; ++i) {
    const BlockHash* parent = i == 0 ? nullptr : &(*hashes)[i - 1];
    const BlockHash h = hash_block(parent, tokens.subspan(i * block_size, block_size), extra_keys);
    hashes->push_back(h);
  }
}

uint64_t hash_bytes(std::span<const unsigned char> bytes) {
  Hasher128 h(0x4259544553ULL);  // "BYTES"
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w = 0;
    for (int k = 0; k < 8; ++k) w |= uint64_t{bytes[i + k]} << (8 * k);
    h.absorb(w);
  }
  uint64_t tail = 0;
  for (int k = 0; i + k < bytes.size(); ++k) tail |= uint64_t{bytes[i + k]} << (8 * k);
  h.absorb(tail);
  h.absorb(bytes.size());
  const BlockHash r = h.finish();
  return r.hi ^ r.lo;
}

}  // namespace tessera
