// HostKvTier (the host tier of the prefix cache) and KvCacheManager with it: which host
// block holds which prefix, least recently used eviction, pins within a step, and the
// store / load copies a step's allocations queue.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

#include "kv/host_kv_tier.h"
#include "kv/kv_cache_manager.h"

namespace tessera {
namespace {

BlockHash h(uint64_t v) { return BlockHash{v, v * 31}; }

TEST(HostKvTier, StoresEvictLeastRecentlyUsedAndLoadsFindThem) {
  HostKvTier t(3);
  EXPECT_EQ(t.store(h(1)), 0);
  EXPECT_EQ(t.store(h(2)), 1);
  EXPECT_EQ(t.store(h(3)), 2);
  t.end_step();
  EXPECT_EQ(t.store(h(2)), std::nullopt);  // already here: refreshed, no copy
  EXPECT_EQ(t.load(h(1)), 0);              // refreshed too: h(3) is now the least recent
  t.end_step();
  EXPECT_EQ(t.store(h(4)), 2);
  EXPECT_EQ(t.load(h(3)), std::nullopt);
  EXPECT_EQ(t.load(h(4)), 2);
  EXPECT_EQ(t.num_cached(), 3u);
  EXPECT_EQ(t.check_invariants(), "");
}

TEST(HostKvTier, PinnedBlocksAreNotReusedWithinAStep) {
  HostKvTier t(2);
  ASSERT_EQ(t.store(h(1)), 0);
  ASSERT_EQ(t.store(h(2)), 1);
  t.end_step();
  // A load's source and a store's destination stay put until the step's copies are planned.
  EXPECT_EQ(t.load(h(1)), 0);
  EXPECT_EQ(t.store(h(3)), 1);            // evicts h(2), the only unpinned block
  EXPECT_EQ(t.store(h(4)), std::nullopt);  // everything pinned: this prefix is not kept
  EXPECT_EQ(t.load(h(1)), 0);
  t.end_step();
  EXPECT_EQ(t.store(h(4)), 1);  // h(3) is the least recent now (h(1) was loaded after it)
  EXPECT_EQ(t.load(h(3)), std::nullopt);
  EXPECT_EQ(t.load(h(1)), 0);
  EXPECT_EQ(t.check_invariants(), "");
}

TEST(HostKvTier, RandomOperationsKeepInvariants) {
  std::mt19937 rng(3);
  HostKvTier t(7);
  for (int i = 0; i < 5000; ++i) {
    const uint64_t v = rng() % 20;
    if (rng() % 3 == 0) {
      const auto got = t.load(h(v));
      if (got) {
        EXPECT_GE(*got, 0);
        EXPECT_LT(*got, 7);
      }
    } else {
      t.store(h(v));
    }
    if (rng() % 4 == 0) t.end_step();
    ASSERT_EQ(t.check_invariants(), "") << "after operation " << i;
  }
}

std::vector<int32_t> tokens_from(int n, int start) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}

TEST(KvCacheManagerOffload, EvictedPrefixesAreStoredAndLoadedBackIntoFreshBlocks) {
  // 4 usable device blocks of 4 tokens, 8 host blocks.
  KvCacheManager m(/*num_blocks=*/5, /*block_size=*/4, /*prefix caching=*/true, /*num_host_blocks=*/8);
  EXPECT_EQ(m.num_host_blocks(), 8);
  const RequestId a{1}, b{2}, c{3};
  const auto ta = tokens_from(13, 100);  // 3 full blocks + 1 token
  ASSERT_TRUE(m.allocate_slots(a, ta, 0, 13, m.get_computed_blocks(a, ta)));
  EXPECT_EQ(m.take_copies().stores.size(), 0u);  // nothing cached was evicted
  m.free(a);  // blocks 1..3 stay cached (free, evictable); block 4 was a's partial block

  // b takes all four blocks: the free list hands out 4 (never cached), then 3, 2, 1 (a's
  // blocks were freed last first), so a's three cached blocks are stored to the host.
  const auto tb = tokens_from(16, 500);
  ASSERT_TRUE(m.allocate_slots(b, tb, 0, 16, m.get_computed_blocks(b, tb)));
  KvCopies copies = m.take_copies();
  ASSERT_EQ(copies.stores.size(), 3u);
  EXPECT_TRUE(copies.loads.empty());
  std::vector<int32_t> stored_from;
  for (const KvBlockCopy& s : copies.stores) stored_from.push_back(s.device_block);
  EXPECT_EQ(stored_from, (std::vector<int32_t>{3, 2, 1}));
  m.free(b);

  // c has a's prompt: no device hit (b's blocks hold other prefixes), three host hits.
  const ComputedBlocks hit = m.get_computed_blocks(c, ta);
  EXPECT_TRUE(hit.blocks.empty());
  ASSERT_EQ(hit.host_blocks.size(), 3u);
  EXPECT_EQ(hit.num_computed_tokens, 12);
  auto fresh = m.allocate_slots(c, ta, hit.num_computed_tokens, 1, hit);
  ASSERT_TRUE(fresh);
  ASSERT_EQ(fresh->size(), 4u);
  copies = m.take_copies();
  ASSERT_EQ(copies.loads.size(), 3u);
  // a's blocks 0, 1, 2 (device blocks 1, 2, 3) went to host blocks 2, 1, 0; they come back
  // in prefix order into c's first three blocks.
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(copies.loads[j].device_block, (*fresh)[j].value);
    EXPECT_EQ(copies.loads[j].host_block, static_cast<int32_t>(2 - j));
  }
  // Evicting b's cached blocks for c stored them too (b's 4 full blocks, 4 slots taken).
  EXPECT_EQ(copies.stores.size(), 4u);
  EXPECT_EQ(m.offload_loads(), 3);
  EXPECT_EQ(m.offload_stores(), 7);
  EXPECT_EQ(m.prefix_cache_hits(), 12);
  // The loaded blocks are cached on the device again: a fourth request hits them there.
  EXPECT_EQ(m.get_computed_blocks(RequestId{4}, ta).blocks.size(), 3u);
  EXPECT_EQ(m.check_invariants(), "");
}

TEST(KvCacheManagerOffload, WithoutPrefixCachingThereIsNoTier) {
  KvCacheManager m(/*num_blocks=*/5, /*block_size=*/4, /*prefix caching=*/false, /*num_host_blocks=*/8);
  EXPECT_EQ(m.num_host_blocks(), 0);
}

// Random admissions, growth and frees over a tiny device pool and host tier: the manager's
// invariants hold, and every load reads a host block last stored with the prefix it loads
// (tracked here by the hashes of what each copy moved).
TEST(KvCacheManagerOffload, RandomRunsLoadOnlyWhatWasStored) {
  std::mt19937 rng(11);
  KvCacheManager m(/*num_blocks=*/9, /*block_size=*/2, true, /*num_host_blocks=*/5);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 6; ++i) prompts.push_back(tokens_from(3 + static_cast<int>(rng() % 8), 10 * i));
  // What each device / host block holds: the prompt index and block index, or -1.
  std::vector<std::pair<int, int>> device(9, {-1, -1}), host(5, {-1, -1});
  std::vector<int> live(6, 0);  // 1 while request i holds blocks
  for (int step = 0; step < 3000; ++step) {
    const int i = static_cast<int>(rng() % 6);
    const RequestId id{static_cast<uint64_t>(i + 1)};
    if (live[i]) {
      m.free(id);
      live[i] = 0;
    } else {
      const auto& t = prompts[static_cast<size_t>(i)];
      const ComputedBlocks hit = m.get_computed_blocks(id, t);
      const int32_t n = static_cast<int32_t>(t.size()) - hit.num_computed_tokens;
      auto fresh = m.allocate_slots(id, t, hit.num_computed_tokens, n, hit);
      if (!fresh) {
        m.free(id);
        m.take_copies();
        continue;
      }
      live[i] = 1;
      const KvCopies copies = m.take_copies();
      for (const KvBlockCopy& s : copies.stores) host[static_cast<size_t>(s.host_block)] = device[static_cast<size_t>(s.device_block)];
      for (const KvBlockCopy& l : copies.loads) device[static_cast<size_t>(l.device_block)] = host[static_cast<size_t>(l.host_block)];
      // The request's blocks: hits hold its prefix already; every block it owns now does.
      const auto blocks = m.blocks(id);
      for (size_t j = 0; j < blocks.size(); ++j) {
        const auto& held = device[static_cast<size_t>(blocks[j].value)];
        if (static_cast<int32_t>(j) < hit.num_computed_tokens / 2) {
          ASSERT_EQ(held, std::make_pair(i, static_cast<int>(j))) << "step " << step << " block " << j;
        }
        device[static_cast<size_t>(blocks[j].value)] = {i, static_cast<int>(j)};  // written by this step's forward
      }
    }
    ASSERT_EQ(m.check_invariants(), "") << "step " << step;
  }
  EXPECT_GT(m.offload_loads(), 0);
}

}  // namespace
}  // namespace tessera
