// The pool of KV-cache blocks: reference counts, a free list in LRU order and the table of
// cached full blocks (prefix caching).
//
// Free list: blocks with ref_cnt == 0, least recently freed first. New blocks are taken
// from its head; a taken block that still holds a cached hash is evicted from the cache
// table then. Freed blocks go to the tail, so a cached prefix survives as long as possible.
// Block 0 is the null block: never free, never handed out (padding in block tables).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/ids.h"
#include "kv/block_hash.h"
#include "kv/index_list.h"

namespace tessera {

class BlockPool {
 public:
  // num_blocks includes the null block; blocks 1..num_blocks-1 start free, in id order.
  BlockPool(int32_t num_blocks, bool enable_caching);

  int32_t num_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  // Blocks that can be handed out now (free, cached or not).
  int32_t num_free_blocks() const { return free_.size(); }
  // Fraction of usable blocks referenced by some request.
  double usage() const;
  static constexpr BlockId null_block() { return BlockId{0}; }

  // Takes n blocks from the head of the free list (ref_cnt 1 each), evicting their cached
  // hashes; each evicted (block, hash) is appended to `evicted` when given (the KV offload
  // tier copies them out first). Precondition: n <= num_free_blocks().
  std::vector<BlockId> get_new_blocks(int32_t n, std::vector<std::pair<BlockId, BlockHash>>* evicted = nullptr);

  // A cached block holding exactly this prefix, if any (takes no reference).
  std::optional<BlockId> get_cached_block(const BlockHash& hash) const;

  // One more reference to each block (prefix hits); a block at ref_cnt 0 leaves the free list.
  void touch(std::span<const BlockId> blocks);

  // One reference less on each block, in the given order; blocks reaching 0 join the tail
  // of the free list in that order (pass a request's blocks last-first so its prefix stays
  // cached longest).
  void free_blocks(std::span<const BlockId> blocks);

  // Records that `block` (full, referenced) holds the prefix with this hash. A block is
  // cached at most once; equal hashes on several blocks are allowed (two requests computed
  // the same prefix at once) and any of them serves a hit.
  void cache_block(BlockId block, const BlockHash& hash);

  // Drops the block's cached hash (its K/V will not be written after all).
  void uncache_block(BlockId block) { evict_hash(block.value); }

  // Drops every cached hash; only when no block is referenced (returns false otherwise).
  bool reset_prefix_cache();

  // Introspection (tests, metrics).
  int32_t ref_cnt(BlockId b) const { return blocks_[b.value].ref_cnt; }
  std::optional<BlockHash> block_hash(BlockId b) const;
  std::vector<BlockId> free_list() const;  // head (next to be taken) first
  size_t num_cached_blocks() const { return num_cached_; }
  // Every internal invariant; "" when all hold, else what broke.
  std::string check_invariants() const;

 private:
  struct Block {
    int32_t ref_cnt = 0;
    bool has_hash = false;
    BlockHash hash;
  };

  // Drops the block's cached hash, if any; returns it.
  std::optional<BlockHash> evict_hash(int32_t id);

  std::vector<Block> blocks_;
  IndexList free_;  // blocks with ref_cnt 0, least recently freed first
  bool enable_caching_;
  size_t num_cached_ = 0;
  std::unordered_map<BlockHash, std::vector<int32_t>, BlockHashHasher> cached_;
};

}  // namespace tessera
