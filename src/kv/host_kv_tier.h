// HostKvTier: the host-memory tier of the prefix cache (KV offload). When the device pool
// hands out a cached block (evicting its prefix), the block's K/V is first copied to a host
// block under the same hash; a later request whose prefix misses on the device but hits
// here gets a fresh device block loaded from the host copy instead of recomputing it, and
// so does a preempted request when it comes back.
//
// This class only decides which host block holds which hash (least recently used evicted
// first); the copies themselves are listed in the SchedulerOutput and done by the model
// runner at the start of the step, stores before loads. A host block named by a copy of
// the step being planned is pinned until end_step(), so no later copy of the same step
// overwrites it (a store cannot evict a load's source, nor two stores share a block).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"
#include "kv/index_list.h"

namespace tessera {

class HostKvTier {
 public:
  explicit HostKvTier(int32_t num_blocks);

  int32_t num_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  size_t num_cached() const { return by_hash_.size(); }

  // The host block holding this prefix, if any; pins it and makes it the most recent.
  std::optional<int32_t> load(const BlockHash& hash);

  // A host block to copy a device block of this prefix into: none when the prefix is here
  // already (it is refreshed instead) or every block is pinned. Evicts the least recently
  // used unpinned block; pins the one returned.
  std::optional<int32_t> store(const BlockHash& hash);

  // The step's copies are planned: unpins every block.
  void end_step();

  // Every internal invariant; "" when all hold.
  std::string check_invariants() const;

 private:
  struct Block {
    bool has_hash = false;
    BlockHash hash;
    bool pinned = false;
  };
  void touch(int32_t id);  // most recently used now

  std::vector<Block> blocks_;
  IndexList lru_;  // every block, least recently used first
  std::vector<int32_t> pinned_;
  std::unordered_map<BlockHash, int32_t, BlockHashHasher> by_hash_;
};

}  // namespace tessera
