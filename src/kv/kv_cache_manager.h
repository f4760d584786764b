// KvCacheManager: which KV blocks each request owns, behind a narrow interface for the
// scheduler. Prefix hits come from chained block hashes (block_hash.h); blocks are cached
// as soon as the tokens that fill them are scheduled, so a request admitted later in the
// same step already hits them (their K/V is written before any layer's attention reads it).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/ids.h"
#include "kv/block_hash.h"
#include "kv/block_pool.h"
#include "kv/host_kv_tier.h"
#include "kv/kv_block_copy.h"

namespace tessera {

// A request's cached prefix, found at admission: device blocks, then (with a host tier)
// host blocks that allocate_slots loads into fresh device blocks.
struct ComputedBlocks {
  std::vector<BlockId> blocks;
  std::vector<int32_t> host_blocks;
  int32_t num_computed_tokens = 0;  // (blocks.size() + host_blocks.size()) * block_size
};

class KvCacheManager {
 public:
  // num_host_blocks > 0 (with prefix caching): a host tier of that many blocks keeps the
  // prefixes the device evicts (KV offload).
  KvCacheManager(int32_t num_blocks, int32_t block_size, bool enable_prefix_caching, int32_t num_host_blocks = 0);

  int32_t block_size() const { return block_size_; }
  bool prefix_caching() const { return enable_caching_; }
  const BlockPool& pool() const { return pool_; }
  double usage() const { return pool_.usage(); }

  // The longest cached prefix of `tokens` in whole blocks, at most tokens.size() - 1 tokens
  // (the last token is always computed: its logits are needed): on the device, then in
  // the host tier. Takes no references (host blocks found stay pinned for this step).
  // Counts a prefix-cache query of tokens.size() tokens and its hit tokens. The request's
  // extra keys must stay the same for its life (its block hashes are kept until free()).
  ComputedBlocks get_computed_blocks(RequestId id, std::span<const int32_t> tokens, ExtraKeys extra_keys = {});

  // Makes room for num_new_tokens more tokens after num_computed_tokens (which include
  // `computed`, the prefix found by get_computed_blocks for a request being admitted; empty
  // otherwise). tokens: every token known for the request (prompt + output so far); in a
  // look-ahead step the last new token is not known yet (it is still on the device), and
  // blocks are cached only as far as tokens are known. Returns the newly allocated blocks,
  // or nullopt (nothing changed) when the free blocks cannot cover them. The prefix's host
  // blocks get the first fresh blocks, and their loads are queued (take_copies); cached
  // blocks the allocation evicts are queued as stores to the host tier first.
  std::optional<std::vector<BlockId>> allocate_slots(RequestId id, std::span<const int32_t> tokens,
                                                     int32_t num_computed_tokens, int32_t num_new_tokens,
                                                     const ComputedBlocks& computed = {},
                                                     ExtraKeys extra_keys = {});

  // Releases every block of the request (finish, abort, preemption), last block first so
  // the prefix stays cached longest.
  void free(RequestId id);

  // A request taken back out of the step being planned (preempted after it was scheduled):
  // the blocks that step would have filled past its first num_written_tokens tokens were
  // cached when scheduled, but will not be written: they leave the prefix cache.
  void uncache_unwritten(RequestId id, int32_t num_written_tokens);

  // The request's blocks in order (its block table); empty when it holds none.
  std::span<const BlockId> blocks(RequestId id) const;
  // Blocks needed to hold num_tokens tokens.
  int32_t blocks_for(int64_t num_tokens) const {
    return static_cast<int32_t>((num_tokens + block_size_ - 1) / block_size_);
  }
  int32_t num_free_blocks() const { return pool_.num_free_blocks(); }
  size_t num_requests() const { return requests_.size(); }

  // Prefix cache counters since start: tokens queried and tokens hit (on the device or in
  // the host tier).
  int64_t prefix_cache_queries() const { return queries_; }
  int64_t prefix_cache_hits() const { return hits_; }
  bool reset_prefix_cache();

  // The host tier (KV offload): its size in blocks (0: none), blocks stored and loaded since start.
  int32_t num_host_blocks() const { return host_ ? host_->num_blocks() : 0; }
  int64_t offload_stores() const { return num_stores_; }
  int64_t offload_loads() const { return num_loads_; }
  // The copies queued since the last call (one step's), in the order the runner must do
  // them; ends the step's pins in the host tier.
  KvCopies take_copies();

  // Pool invariants plus: each request's blocks are referenced, ref counts equal the number
  // of requests holding each block. "" when all hold.
  std::string check_invariants() const;

 private:
  struct RequestBlocks {
    std::vector<BlockId> blocks;
    std::vector<BlockHash> hashes;  // of the request's full blocks, as far as known
    int32_t num_cached_blocks = 0;  // blocks[0, n) are in the prefix cache
  };

  int32_t block_size_;
  bool enable_caching_;
  BlockPool pool_;
  std::optional<HostKvTier> host_;
  KvCopies copies_;
  std::vector<std::pair<BlockId, BlockHash>> evicted_;  // scratch
  std::unordered_map<RequestId, RequestBlocks> requests_;
  int64_t queries_ = 0, hits_ = 0, num_stores_ = 0, num_loads_ = 0;
};

}  // namespace tessera
