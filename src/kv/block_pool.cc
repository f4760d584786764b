#include "kv/block_pool.h"

#include <algorithm>
#include <string>

#include "common/check.h"

namespace tessera {

BlockPool::BlockPool(int32_t num_blocks, bool enable_caching)
    : blocks_(static_cast<size_t>(std::max(num_blocks, 1))), free_(std::max(num_blocks, 1)), enable_caching_(enable_caching) {
  for (int32_t id = 1; id < num_blocks; ++id) free_.push_back(id);
}

double BlockPool::usage() const {
  const int32_t usable = num_blocks() - 1;
  return usable <= 0 ? 0.0 : 1.0 - static_cast<double>(free_.size()) / usable;
}

std::optional<BlockHash> BlockPool::evict_hash(int32_t id) {
  Block& b = blocks_[id];
  if (!b.has_hash) return std::nullopt;
  auto it = cached_.find(b.hash);
  TESSERA_CHECK(it != cached_.end());
  auto& ids = it->second;
  ids.erase(std::find(ids.begin(), ids.end(), id));
  if (ids.empty()) cached_.erase(it);
  b.has_hash = false;
  --num_cached_;
  return b.hash;
}

std::vector<BlockId> BlockPool::get_new_blocks(int32_t n, std::vector<std::pair<BlockId, BlockHash>>* evicted) {
  TESSERA_CHECK_MSG(n >= 0 && n <= free_.size(), "get_new_blocks: not enough free blocks");
  std::vector<BlockId> out;
  out.reserve(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const int32_t id = free_.front();
    free_.erase(id);
    if (std::optional<BlockHash> h = evict_hash(id); h && evicted != nullptr) evicted->emplace_back(BlockId{id}, *h);
    blocks_[id].ref_cnt = 1;
    out.emplace_back(id);
  }
  return out;
}

std::optional<BlockId> BlockPool::get_cached_block(const BlockHash& hash) const {
  if (!enable_caching_) return std::nullopt;
  auto it = cached_.find(hash);
  if (it == cached_.end()) return std::nullopt;
  return BlockId{it->second.front()};
}

void BlockPool::touch(std::span<const BlockId> blocks) {
  for (BlockId id : blocks) {
    TESSERA_CHECK(id.value > 0 && id.value < num_blocks());
    Block& b = blocks_[id.value];
    if (b.ref_cnt == 0) free_.erase(id.value);
    ++b.ref_cnt;
  }
}

void BlockPool::free_blocks(std::span<const BlockId> blocks) {
  for (BlockId id : blocks) {
    TESSERA_CHECK(id.value > 0 && id.value < num_blocks());
    Block& b = blocks_[id.value];
    TESSERA_CHECK_MSG(b.ref_cnt > 0, "free_blocks: block freed more often than taken");
    if (--b.ref_cnt == 0) free_.push_back(id.value);
  }
}

void BlockPool::cache_block(BlockId id, const BlockHash& hash) {
  if (!enable_caching_) return;
  Block& b = blocks_[id.value];
  TESSERA_CHECK(id.value > 0 && b.ref_cnt > 0);
  if (b.has_hash) {
    TESSERA_CHECK_MSG(b.hash == hash, "cache_block: block already cached with another prefix");
    return;
  }
  b.has_hash = true;
  b.hash = hash;
  cached_[hash].push_back(id.value);
  ++num_cached_;
}

bool BlockPool::reset_prefix_cache() {
  if (free_.size() != num_blocks() - 1) return false;
  for (Block& b : blocks_) b.has_hash = false;
  cached_.clear();
  num_cached_ = 0;
  return true;
}

std::optional<BlockHash> BlockPool::block_hash(BlockId id) const {
  const Block& b = blocks_[id.value];
  if (!b.has_hash) return std::nullopt;
  return b.hash;
}

std::vector<BlockId> BlockPool::free_list() const {
  std::vector<BlockId> out;
  for (int32_t id = free_.front(); id >= 0; id = free_.next(id)) out.emplace_back(id);
  return out;
}

std::string BlockPool::check_invariants() const {
  if (std::string e = free_.check(); !e.empty()) return "free " + e;
  if (free_.contains(0)) return "null block in the free list";
  size_t hashed = 0;
  for (int32_t id = 1; id < num_blocks(); ++id) {
    const Block& b = blocks_[id];
    if (b.ref_cnt < 0) return "negative ref count";
    if ((b.ref_cnt == 0) != free_.contains(id)) return "block " + std::to_string(id) + " free-list membership wrong";
    if (b.has_hash) {
      ++hashed;
      auto it = cached_.find(b.hash);
      if (it == cached_.end() || std::find(it->second.begin(), it->second.end(), id) == it->second.end()) {
        return "block " + std::to_string(id) + " hashed but not in the cache table";
      }
    }
  }
  size_t table = 0;
  for (const auto& [h, ids] : cached_) {
    for (int32_t id : ids) {
      if (!blocks_[id].has_hash || !(blocks_[id].hash == h)) return "cache table entry is stale";
    }
    table += ids.size();
  }
  if (hashed != table || hashed != num_cached_) return "cached block count mismatch";
  if (blocks_[0].ref_cnt != 0 || free_.contains(0)) return "null block touched";
  return "";
}

}  // namespace tessera
