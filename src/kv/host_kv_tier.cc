#include "kv/host_kv_tier.h"

#include <algorithm>
#include <string>

#include "common/check.h"

namespace tessera {

HostKvTier::HostKvTier(int32_t num_blocks)
    : blocks_(static_cast<size_t>(std::max(num_blocks, 0))), lru_(std::max(num_blocks, 0)) {
  for (int32_t id = 0; id < num_blocks; ++id) lru_.push_back(id);
}

void HostKvTier::touch(int32_t id) {
  lru_.erase(id);
  lru_.push_back(id);
}

std::optional<int32_t> HostKvTier::load(const BlockHash& hash) {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  const int32_t id = it->second;
  touch(id);
  if (!blocks_[id].pinned) {
    blocks_[id].pinned = true;
    pinned_.push_back(id);
  }
  return id;
}

std::optional<int32_t> HostKvTier::store(const BlockHash& hash) {
  if (auto it = by_hash_.find(hash); it != by_hash_.end()) {
    touch(it->second);
    return std::nullopt;
  }
  int32_t id = lru_.front();
  while (id >= 0 && blocks_[id].pinned) id = lru_.next(id);
  if (id < 0) return std::nullopt;
  Block& b = blocks_[id];
  if (b.has_hash) by_hash_.erase(b.hash);
  b.has_hash = true;
  b.hash = hash;
  by_hash_[hash] = id;
  touch(id);
  b.pinned = true;
  pinned_.push_back(id);
  return id;
}

void HostKvTier::end_step() {
  for (int32_t id : pinned_) blocks_[id].pinned = false;
  pinned_.clear();
}

std::string HostKvTier::check_invariants() const {
  if (std::string e = lru_.check(); !e.empty()) return "host tier LRU " + e;
  if (lru_.size() != num_blocks()) return "host tier LRU list does not hold every block";
  size_t hashed = 0;
  for (int32_t id = 0; id < num_blocks(); ++id) {
    const Block& b = blocks_[id];
    if (!b.has_hash) continue;
    ++hashed;
    auto it = by_hash_.find(b.hash);
    if (it == by_hash_.end() || it->second != id) return "host block " + std::to_string(id) + " not in the hash table";
  }
  if (hashed != by_hash_.size()) return "host tier hash table has stale entries";
  return "";
}

}  // namespace tessera
