#include "kv/kv_cache_manager.h"

#include <algorithm>
#include <map>
#include <string>

#include "common/check.h"

namespace tessera {

KvCacheManager::KvCacheManager(int32_t num_blocks, int32_t block_size, bool enable_prefix_caching,
                               int32_t num_host_blocks)
    : block_size_(block_size), enable_caching_(enable_prefix_caching), pool_(num_blocks, enable_prefix_caching) {
  TESSERA_CHECK(block_size > 0 && num_host_blocks >= 0);
  if (enable_caching_ && num_host_blocks > 0) host_.emplace(num_host_blocks);
}

ComputedBlocks KvCacheManager::get_computed_blocks(RequestId id, std::span<const int32_t> tokens,
                                                   ExtraKeys extra_keys) {
  ComputedBlocks out;
  if (!enable_caching_ || tokens.empty()) return out;
  RequestBlocks& r = requests_[id];
  extend_block_hashes(tokens, block_size_, extra_keys, &r.hashes);
  // Never the whole prompt: the last token must run to produce logits.
  const size_t max_blocks = (tokens.size() - 1) / static_cast<size_t>(block_size_);
  const size_t limit = std::min(max_blocks, r.hashes.size());
  size_t i = 0;
  for (; i < limit; ++i) {
    auto hit = pool_.get_cached_block(r.hashes[i]);
    if (!hit) break;
    out.blocks.push_back(*hit);
  }
  for (; host_ && i < limit; ++i) {
    auto hit = host_->load(r.hashes[i]);
    if (!hit) break;
    out.host_blocks.push_back(*hit);
  }
  out.num_computed_tokens = static_cast<int32_t>(out.blocks.size() + out.host_blocks.size()) * block_size_;
  queries_ += static_cast<int64_t>(tokens.size());
  hits_ += out.num_computed_tokens;
  return out;
}

std::optional<std::vector<BlockId>> KvCacheManager::allocate_slots(RequestId id, std::span<const int32_t> tokens,
                                                                    int32_t num_computed_tokens,
                                                                    int32_t num_new_tokens,
                                                                    const ComputedBlocks& computed,
                                                                    ExtraKeys extra_keys) {
  TESSERA_CHECK(num_new_tokens >= 0 && num_computed_tokens >= 0);
  const int64_t total_tokens = int64_t{num_computed_tokens} + num_new_tokens;
  RequestBlocks& r = requests_[id];
  const int32_t have = static_cast<int32_t>(r.blocks.size() + computed.blocks.size());
  const int32_t num_new_blocks = std::max(0, blocks_for(total_tokens) - have);
  // Hit blocks nobody references sit in the free list: touching them uses free capacity.
  int32_t evictable_hits = 0;
  for (BlockId b : computed.blocks) evictable_hits += pool_.ref_cnt(b) == 0;
  if (num_new_blocks > pool_.num_free_blocks() - evictable_hits) {
    if (r.blocks.empty()) requests_.erase(id);  // holds nothing; hashes are cheap to redo
    return std::nullopt;
  }
  pool_.touch(computed.blocks);
  r.blocks.insert(r.blocks.end(), computed.blocks.begin(), computed.blocks.end());
  if (!computed.blocks.empty()) r.num_cached_blocks = std::max<int32_t>(r.num_cached_blocks, static_cast<int32_t>(r.blocks.size()));
  TESSERA_CHECK(computed.host_blocks.size() <= static_cast<size_t>(num_new_blocks));
  evicted_.clear();
  std::vector<BlockId> fresh = pool_.get_new_blocks(num_new_blocks, host_ ? &evicted_ : nullptr);
  for (const auto& [block, hash] : evicted_) {
    if (auto h = host_->store(hash)) {
      copies_.stores.push_back({block.value, *h});
      ++num_stores_;
    }
  }
  for (size_t j = 0; j < computed.host_blocks.size(); ++j) {
    copies_.loads.push_back({fresh[j].value, computed.host_blocks[j]});
    ++num_loads_;
  }
  r.blocks.insert(r.blocks.end(), fresh.begin(), fresh.end());

  if (enable_caching_) {
    // Cache every block these tokens fill, as far as its tokens are known (a look-ahead
    // step's input is still on the device: a later call caches its block).
    const int32_t num_full = static_cast<int32_t>(std::min<int64_t>(total_tokens, static_cast<int64_t>(tokens.size())) / block_size_);
    if (num_full > r.num_cached_blocks) {
      extend_block_hashes(tokens.first(static_cast<size_t>(num_full) * block_size_), block_size_, extra_keys, &r.hashes);
      for (int32_t i = r.num_cached_blocks; i < num_full; ++i) pool_.cache_block(r.blocks[i], r.hashes[i]);
      r.num_cached_blocks = num_full;
    }
  }
  return fresh;
}

KvCopies KvCacheManager::take_copies() {
  KvCopies out = std::move(copies_);
  copies_ = {};
  if (host_) host_->end_step();
  return out;
}

bool KvCacheManager::reset_prefix_cache() {
  if (!pool_.reset_prefix_cache()) return false;
  if (host_) host_.emplace(host_->num_blocks());
  return true;
}

void KvCacheManager::uncache_unwritten(RequestId id, int32_t num_written_tokens) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;
  RequestBlocks& r = it->second;
  const int32_t keep = std::max(0, num_written_tokens) / block_size_;
  for (int32_t i = keep; i < r.num_cached_blocks; ++i) {
    // Cached in this step, so no other request has hit it yet.
    TESSERA_CHECK(pool_.ref_cnt(r.blocks[i]) == 1);
    pool_.uncache_block(r.blocks[i]);
  }
  r.num_cached_blocks = std::min(r.num_cached_blocks, keep);
}

void KvCacheManager::free(RequestId id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;
  std::vector<BlockId> reversed(it->second.blocks.rbegin(), it->second.blocks.rend());
  pool_.free_blocks(reversed);
  requests_.erase(it);
}

std::span<const BlockId> KvCacheManager::blocks(RequestId id) const {
  auto it = requests_.find(id);
  if (it == requests_.end()) return {};
  return it->second.blocks;
}

std::string KvCacheManager::check_invariants() const {
  if (std::string e = pool_.check_invariants(); !e.empty()) return e;
  if (host_) {
    if (std::string e = host_->check_invariants(); !e.empty()) return e;
  }
  std::map<int32_t, int32_t> holders;
  for (const auto& [id, r] : requests_) {
    for (BlockId b : r.blocks) {
      if (b.value <= 0 || b.value >= pool_.num_blocks()) return "request holds an invalid block";
      ++holders[b.value];
    }
    if (r.num_cached_blocks > static_cast<int32_t>(r.blocks.size())) return "more cached blocks than blocks";
    for (int32_t i = 0; enable_caching_ && i < r.num_cached_blocks; ++i) {
      auto h = pool_.block_hash(r.blocks[i]);
      if (!h || !(*h == r.hashes[i])) return "a request's cached block lost its hash";
    }
  }
  for (int32_t b = 1; b < pool_.num_blocks(); ++b) {
    const auto it = holders.find(b);
    const int32_t n = it == holders.end() ? 0 : it->second;
    if (pool_.ref_cnt(BlockId{b}) != n) {
      return "block " + std::to_string(b) + " ref count " + std::to_string(pool_.ref_cnt(BlockId{b})) + " but " +
             std::to_string(n) + " holders";
    }
  }
  return "";
}

}  // namespace tessera
