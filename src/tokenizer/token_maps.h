// Open-addressing hash maps for the hot lookups of BPE: token bytes -> id and
// (left id, right id) -> (rank, merged id). Both are built once at load and read-only after.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace tessera::tokenizer {

inline uint64_t hash_bytes(std::string_view s) {
  // 64-bit FNV-1a over 8-byte words, then a final mix: fast for short tokens.
  uint64_t h = 0xcbf29ce484222325ull ^ s.size();
  const char* p = s.data();
  size_t n = s.size();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p, n);
  h = (h ^ tail) * 0x100000001b3ull;
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ull;
  h ^= h >> 32;
  return h;
}

inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// String -> int32 id. Keys are views into storage the owner keeps alive.
class StringIdMap {
 public:
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    size_ = 0;
  }
  // Inserts or overwrites (a later duplicate wins, as when serde fills a HashMap).
  void insert(std::string_view key, int32_t id) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    insert_no_grow(key, id);
  }
  int32_t find(std::string_view key) const { return find_hashed(key, hash_bytes(key)); }
  int32_t find_hashed(std::string_view key, uint64_t h) const {
    if (slots_.empty()) return -1;
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.hash == h && s.len == key.size() && std::memcmp(s.data, key.data(), key.size()) == 0) {
        return s.id;
      }
    }
  }
  size_t size() const { return size_; }

  // Batch lookups at load time: touch the slot (stage 1), then its key bytes (stage 2),
  // before find_hashed, so cache misses overlap instead of queueing.
  void prefetch_slot(uint64_t h) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[h & mask_]);
  }
  void prefetch_key(uint64_t h) const {
    if (!slots_.empty()) __builtin_prefetch(slots_[h & mask_].data);
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    const char* data = nullptr;
    uint32_t len = 0;
    int32_t id = -1;
  };
  void insert_no_grow(std::string_view key, int32_t id) {
    const uint64_t h = hash_bytes(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.id < 0) {
        s = Slot{h, key.data(), static_cast<uint32_t>(key.size()), id};
        ++size_;
        return;
      }
      if (s.hash == h && s.len == key.size() && std::memcmp(s.data, key.data(), key.size()) == 0) {
        s.id = id;
        return;
      }
    }
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    reserve(old.empty() ? 8 : old.size());
    for (const Slot& s : old) {
      if (s.id >= 0) insert_no_grow(std::string_view(s.data, s.len), s.id);
    }
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// (left, right) id pair -> (rank, merged id).
class PairMap {
 public:
  struct Value {
    int32_t rank;
    int32_t id;
  };
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
  }
  // Overwrites an existing pair (a repeated merge keeps its last rank, as HF's HashMap).
  void insert(int32_t left, int32_t right, Value v) {
    const uint64_t key = pack(left, right);
    for (size_t i = mix64(key) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.value.id < 0 || s.key == key) {
        s.key = key;
        s.value = v;
        return;
      }
    }
  }
  // Returns {-1, -1} when absent.
  Value find(int32_t left, int32_t right) const {
    const uint64_t key = pack(left, right);
    for (size_t i = mix64(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value.id < 0) return Value{-1, -1};
      if (s.key == key) return s.value;
    }
  }

 private:
  static uint64_t pack(int32_t l, int32_t r) {
    return (uint64_t(uint32_t(l)) << 32) | uint32_t(r);
  }
  struct Slot {
    uint64_t key = 0;
    Value value{-1, -1};
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace tessera::tokenizer
