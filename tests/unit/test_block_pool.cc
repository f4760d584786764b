// BlockPool: exact block ids and free-list order through allocate / cache / free / evict.
#include <gtest/gtest.h>

#include <vector>

#include "kv/block_pool.h"

namespace tessera {
namespace {

std::vector<int32_t> ids(const std::vector<BlockId>& v) {
  std::vector<int32_t> out;
  for (BlockId b : v) out.push_back(b.value);
  return out;
}

BlockHash h(uint64_t n) { return BlockHash{n, ~n}; }

TEST(BlockPool, StartsWithEveryBlockButTheNullOneFreeInIdOrder) {
  BlockPool pool(6, true);
  EXPECT_EQ(pool.num_free_blocks(), 5);
  EXPECT_EQ(ids(pool.free_list()), (std::vector<int32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(pool.usage(), 0.0);
  EXPECT_EQ(pool.check_invariants(), "");
}

TEST(BlockPool, AllocatesFromTheHeadAndFreesToTheTailInGivenOrder) {
  BlockPool pool(6, true);
  EXPECT_EQ(ids(pool.get_new_blocks(2)), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(ids(pool.get_new_blocks(2)), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(ids(pool.free_list()), (std::vector<int32_t>{5}));
  EXPECT_DOUBLE_EQ(pool.usage(), 0.8);
  // A request frees last block first: 2 then 1.
  pool.free_blocks(std::vector<BlockId>{BlockId{2}, BlockId{1}});
  EXPECT_EQ(ids(pool.free_list()), (std::vector<int32_t>{5, 2, 1}));
  EXPECT_EQ(ids(pool.get_new_blocks(3)), (std::vector<int32_t>{5, 2, 1}));
  EXPECT_EQ(pool.num_free_blocks(), 0);
  EXPECT_EQ(pool.check_invariants(), "");
}

TEST(BlockPool, SharedBlocksReturnOnlyWhenTheLastReferenceGoes) {
  BlockPool pool(4, true);
  auto b = pool.get_new_blocks(1);
  pool.touch(b);
  EXPECT_EQ(pool.ref_cnt(b[0]), 2);
  pool.free_blocks(b);
  EXPECT_EQ(ids(pool.free_list()), (std::vector<int32_t>{2, 3}));
  pool.free_blocks(b);
  EXPECT_EQ(ids(pool.free_list()), (std::vector<int32_t>{2, 3, 1}));
  EXPECT_EQ(pool.check_invariants(), "");
}

TEST(BlockPool, CachedBlocksSurviveFreeAndAreEvictedWhenReused) {
  BlockPool pool(4, true);
  auto a = pool.get_new_blocks(2);  // 1, 2
  pool.cache_block(a[0], h(10));
  pool.cache_block(a[1], h(11));
  pool.free_blocks(std::vector<BlockId>{a[1], a[0]});
  EXPECT_EQ(ids(pool.free_list()), (std::vector<int32_t>{3, 2, 1}));
  // Freed but still cached: a prefix hit finds them.
  ASSERT_TRUE(pool.get_cached_block(h(10)).has_value());
  EXPECT_EQ(pool.get_cached_block(h(10))->value, 1);
  // A hit takes the block back out of the free list.
  pool.touch(std::vector<BlockId>{BlockId{1}});
  EXPECT_EQ(ids(pool.free_list()), (std::vector<int32_t>{3, 2}));
  // Allocation takes 3 (never cached), then 2, whose hash is evicted.
  EXPECT_EQ(ids(pool.get_new_blocks(2)), (std::vector<int32_t>{3, 2}));
  EXPECT_FALSE(pool.get_cached_block(h(11)).has_value());
  EXPECT_TRUE(pool.get_cached_block(h(10)).has_value());
  EXPECT_EQ(pool.num_cached_blocks(), 1u);
  EXPECT_EQ(pool.check_invariants(), "");
}

TEST(BlockPool, DuplicateHashesOnSeveralBlocksAreAllowed) {
  BlockPool pool(4, true);
  auto a = pool.get_new_blocks(2);
  pool.cache_block(a[0], h(7));
  pool.cache_block(a[1], h(7));
  EXPECT_EQ(pool.num_cached_blocks(), 2u);
  pool.free_blocks(std::vector<BlockId>{a[0]});
  pool.get_new_blocks(2);  // 3, then 1 (evicts one copy)
  ASSERT_TRUE(pool.get_cached_block(h(7)).has_value());
  EXPECT_EQ(pool.get_cached_block(h(7))->value, 2);
  EXPECT_EQ(pool.check_invariants(), "");
}

TEST(BlockPool, CachingDisabledNeverHits) {
  BlockPool pool(4, false);
  auto a = pool.get_new_blocks(1);
  pool.cache_block(a[0], h(1));
  EXPECT_FALSE(pool.get_cached_block(h(1)).has_value());
  EXPECT_EQ(pool.num_cached_blocks(), 0u);
}

TEST(BlockPool, ResetPrefixCacheOnlyWhenIdle) {
  BlockPool pool(4, true);
  auto a = pool.get_new_blocks(1);
  pool.cache_block(a[0], h(1));
  EXPECT_FALSE(pool.reset_prefix_cache());
  pool.free_blocks(a);
  EXPECT_TRUE(pool.reset_prefix_cache());
  EXPECT_FALSE(pool.get_cached_block(h(1)).has_value());
  EXPECT_EQ(pool.check_invariants(), "");
}

TEST(BlockHash, ChainsThePrefixAndTheExtraKeys) {
  const std::vector<int32_t> t1 = {1, 2, 3, 4}, t2 = {1, 2, 3, 5};
  const BlockHash a = hash_block(nullptr, t1, {});
  EXPECT_EQ(a, hash_block(nullptr, t1, {}));
  EXPECT_FALSE(a == hash_block(nullptr, t2, {}));
  const BlockHash child = hash_block(&a, t1, {});
  const BlockHash other_parent = hash_block(nullptr, t2, {});
  EXPECT_FALSE(child == hash_block(&other_parent, t1, {}));
  const uint64_t salt[] = {42};
  EXPECT_FALSE(a == hash_block(nullptr, t1, salt));
  // Token order and count matter.
  const std::vector<int32_t> swapped = {2, 1, 3, 4}, shorter = {1, 2, 3};
  EXPECT_FALSE(a == hash_block(nullptr, swapped, {}));
  EXPECT_FALSE(a == hash_block(nullptr, shorter, {}));

  std::vector<BlockHash> hs;
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 1, 2, 3, 4, 9};
  extend_block_hashes(tokens, 4, {}, &hs);
  ASSERT_EQ(hs.size(), 2u);  // the partial third block is not hashed
  EXPECT_EQ(hs[0], a);
  EXPECT_EQ(hs[1], child);
}

}  // namespace
}  // namespace tessera
