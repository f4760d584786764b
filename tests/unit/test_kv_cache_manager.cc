// KvCacheManager: exact block ids through allocation, prefix hits, sharing, eviction and
// free; a randomized run checks the invariants after every operation.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

#include "kv/kv_cache_manager.h"

namespace tessera {
namespace {

std::vector<int32_t> ids(std::span<const BlockId> v) {
  std::vector<int32_t> out;
  for (BlockId b : v) out.push_back(b.value);
  return out;
}

std::vector<int32_t> iota_tokens(int n, int start = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}

TEST(KvCacheManager, AllocatesBlocksAsTokensArrive) {
  KvCacheManager m(/*num_blocks=*/10, /*block_size=*/4, /*prefix caching=*/true);
  const RequestId r{1};
  auto tokens = iota_tokens(10);
  auto c = m.get_computed_blocks(r, tokens);
  EXPECT_EQ(c.num_computed_tokens, 0);
  // Chunked prefill: 6 tokens, then 4.
  auto a = m.allocate_slots(r, tokens, 0, 6, c);
  ASSERT_TRUE(a);
  EXPECT_EQ(ids(*a), (std::vector<int32_t>{1, 2}));
  a = m.allocate_slots(r, tokens, 6, 4);
  ASSERT_TRUE(a);
  EXPECT_EQ(ids(*a), (std::vector<int32_t>{3}));
  EXPECT_EQ(ids(m.blocks(r)), (std::vector<int32_t>{1, 2, 3}));
  // Decode: token 11 fits block 3, token 13 needs block 4.
  tokens.push_back(7);
  EXPECT_TRUE(m.allocate_slots(r, tokens, 10, 1)->empty());
  tokens.push_back(8);
  tokens.push_back(9);
  EXPECT_EQ(ids(*m.allocate_slots(r, tokens, 11, 2)), (std::vector<int32_t>{4}));
  EXPECT_EQ(m.pool().num_cached_blocks(), 3u);  // blocks 1-3 are full
  EXPECT_EQ(m.check_invariants(), "");
  m.free(r);
  // Last block first: 4, 3, 2, 1 join the tail.
  EXPECT_EQ(ids(m.pool().free_list()), (std::vector<int32_t>{5, 6, 7, 8, 9, 4, 3, 2, 1}));
  EXPECT_EQ(m.num_free_blocks(), 9);
  EXPECT_EQ(m.check_invariants(), "");
}

TEST(KvCacheManager, PrefixHitSharesBlocksAndNeverCoversTheLastToken) {
  KvCacheManager m(10, 4, true);
  const RequestId a{1}, b{2}, c{3};
  const auto prompt = iota_tokens(9);  // 2 full blocks + 1 token
  ASSERT_TRUE(m.allocate_slots(a, prompt, 0, 9, m.get_computed_blocks(a, prompt)));
  EXPECT_EQ(ids(m.blocks(a)), (std::vector<int32_t>{1, 2, 3}));

  // Same prompt: 8 tokens hit (blocks 1, 2), the last token is computed in a new block.
  auto hit = m.get_computed_blocks(b, prompt);
  EXPECT_EQ(ids(hit.blocks), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(hit.num_computed_tokens, 8);
  ASSERT_TRUE(m.allocate_slots(b, prompt, 8, 1, hit));
  EXPECT_EQ(ids(m.blocks(b)), (std::vector<int32_t>{1, 2, 4}));
  EXPECT_EQ(m.pool().ref_cnt(BlockId{1}), 2);

  // A prompt of exactly 8 tokens hits only 1 block: its last token must run.
  const std::vector<int32_t> eight(prompt.begin(), prompt.begin() + 8);
  auto hit8 = m.get_computed_blocks(c, eight);
  EXPECT_EQ(ids(hit8.blocks), (std::vector<int32_t>{1}));
  EXPECT_EQ(m.prefix_cache_queries(), 9 + 9 + 8);
  EXPECT_EQ(m.prefix_cache_hits(), 8 + 4);
  m.free(c);
  m.free(a);
  m.free(b);
  EXPECT_EQ(m.num_free_blocks(), 9);
  EXPECT_EQ(m.check_invariants(), "");
}

TEST(KvCacheManager, FreedPrefixIsHitAgainUntilEvicted) {
  KvCacheManager m(5, 4, true);  // 4 usable blocks
  const RequestId a{1}, b{2}, c{3};
  const auto prompt = iota_tokens(9);
  ASSERT_TRUE(m.allocate_slots(a, prompt, 0, 9, m.get_computed_blocks(a, prompt)));  // 1 2 3
  m.free(a);
  EXPECT_EQ(ids(m.pool().free_list()), (std::vector<int32_t>{4, 3, 2, 1}));
  // The freed, cached blocks 1 and 2 serve a hit and leave the free list.
  auto hit = m.get_computed_blocks(b, prompt);
  EXPECT_EQ(ids(hit.blocks), (std::vector<int32_t>{1, 2}));
  ASSERT_TRUE(m.allocate_slots(b, prompt, 8, 1, hit));
  EXPECT_EQ(ids(m.blocks(b)), (std::vector<int32_t>{1, 2, 4}));
  EXPECT_EQ(ids(m.pool().free_list()), (std::vector<int32_t>{3}));
  m.free(b);
  // Another prompt needs all 4 blocks: LRU order evicts the cached prefix.
  const auto other = iota_tokens(16, 5000);
  ASSERT_TRUE(m.allocate_slots(c, other, 0, 16, m.get_computed_blocks(c, other)));
  EXPECT_EQ(ids(m.blocks(c)), (std::vector<int32_t>{3, 4, 2, 1}));
  EXPECT_TRUE(m.get_computed_blocks(RequestId{4}, prompt).blocks.empty());
  m.free(RequestId{4});
  m.free(c);
  EXPECT_EQ(m.check_invariants(), "");
}

TEST(KvCacheManager, RefusesWhatDoesNotFitAndChangesNothing) {
  KvCacheManager m(4, 4, true);  // 3 usable blocks
  const RequestId a{1}, b{2};
  const auto prompt = iota_tokens(12);
  ASSERT_TRUE(m.allocate_slots(a, prompt, 0, 8, m.get_computed_blocks(a, prompt)));
  const auto other = iota_tokens(8, 900);
  EXPECT_FALSE(m.allocate_slots(b, other, 0, 8, m.get_computed_blocks(b, other)));
  EXPECT_TRUE(m.blocks(b).empty());
  EXPECT_EQ(m.num_free_blocks(), 1);
  m.free(a);
  m.free(b);
  // Hit blocks that sit in the free list count against the free capacity: a 12-token
  // prefix cached in all 3 blocks, then a 16-token prompt over it hits 3 blocks and needs
  // a 4th that only eviction of its own hits could provide.
  const RequestId c{3}, d{4};
  const auto p12 = iota_tokens(12, 300);
  ASSERT_TRUE(m.allocate_slots(c, p12, 0, 12, m.get_computed_blocks(c, p12)));
  m.free(c);
  const auto free_before = ids(m.pool().free_list());
  const auto p16 = iota_tokens(16, 300);
  auto hit = m.get_computed_blocks(d, p16);
  EXPECT_EQ(hit.blocks.size(), 3u);
  EXPECT_FALSE(m.allocate_slots(d, p16, 12, 4, hit).has_value());
  EXPECT_EQ(ids(m.pool().free_list()), free_before);
  EXPECT_TRUE(m.blocks(d).empty());
  m.free(d);
  EXPECT_EQ(m.check_invariants(), "");
}

TEST(KvCacheManager, PrefixCachingOffNeverShares) {
  KvCacheManager m(10, 4, false);
  const auto prompt = iota_tokens(9);
  const RequestId a{1}, b{2};
  ASSERT_TRUE(m.allocate_slots(a, prompt, 0, 9, m.get_computed_blocks(a, prompt)));
  auto hit = m.get_computed_blocks(b, prompt);
  EXPECT_TRUE(hit.blocks.empty());
  ASSERT_TRUE(m.allocate_slots(b, prompt, 0, 9, hit));
  EXPECT_EQ(ids(m.blocks(b)), (std::vector<int32_t>{4, 5, 6}));
  m.free(a);
  m.free(b);
  EXPECT_EQ(m.check_invariants(), "");
}

TEST(KvCacheManager, CacheSaltSeparatesEqualPrompts) {
  KvCacheManager m(10, 4, true);
  const auto prompt = iota_tokens(9);
  const uint64_t salt[] = {12345};
  const RequestId a{1}, b{2};
  ASSERT_TRUE(m.allocate_slots(a, prompt, 0, 9, m.get_computed_blocks(a, prompt, salt), salt));
  EXPECT_TRUE(m.get_computed_blocks(b, prompt).blocks.empty());
  const RequestId c{3};  // a request's extra keys are fixed for its life
  EXPECT_EQ(m.get_computed_blocks(c, prompt, salt).blocks.size(), 2u);
  m.free(a);
  m.free(b);
  m.free(c);
  EXPECT_EQ(m.check_invariants(), "");
}

// Random arrivals, chunked prefills, decodes, hits, refusals and frees; invariants after
// every operation; at the end every block is free again.
TEST(KvCacheManager, RandomizedInvariants) {
  std::mt19937 rng(7);
  KvCacheManager m(64, 4, true);
  struct Live {
    RequestId id;
    std::vector<int32_t> tokens;
    int32_t computed = 0;
  };
  std::vector<Live> live;
  uint64_t next_id = 1;
  // A few shared prefixes so hits happen.
  std::vector<std::vector<int32_t>> prefixes;
  for (int p = 0; p < 4; ++p) prefixes.push_back(iota_tokens(4 + 4 * p, 1000 * (p + 1)));
  int refused = 0, hits = 0;
  for (int step = 0; step < 5000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 3 || live.empty()) {
      Live r{RequestId{next_id++}, {}, 0};
      if (rng() % 2) r.tokens = prefixes[rng() % prefixes.size()];
      const int extra = 1 + static_cast<int>(rng() % 20);
      for (int i = 0; i < extra; ++i) r.tokens.push_back(static_cast<int32_t>(rng() % 50));
      auto c = m.get_computed_blocks(r.id, r.tokens);
      hits += c.num_computed_tokens > 0;
      const int32_t chunk = std::min<int32_t>(static_cast<int32_t>(r.tokens.size()) - c.num_computed_tokens,
                                              1 + static_cast<int32_t>(rng() % 12));
      if (m.allocate_slots(r.id, r.tokens, c.num_computed_tokens, chunk, c)) {
        r.computed = c.num_computed_tokens + chunk;
        live.push_back(std::move(r));
      } else {
        ++refused;
        m.free(r.id);
      }
    } else if (op < 8) {
      Live& r = live[rng() % live.size()];
      if (r.computed == static_cast<int32_t>(r.tokens.size())) r.tokens.push_back(static_cast<int32_t>(rng() % 50));
      const int32_t n = std::min<int32_t>(static_cast<int32_t>(r.tokens.size()) - r.computed, 1 + static_cast<int32_t>(rng() % 8));
      if (m.allocate_slots(r.id, r.tokens, r.computed, n)) {
        r.computed += n;
      } else {
        ++refused;
      }
    } else {
      const size_t i = rng() % live.size();
      m.free(live[i].id);
      live.erase(live.begin() + static_cast<long>(i));
    }
    ASSERT_EQ(m.check_invariants(), "") << "step " << step;
    for (const Live& r : live) ASSERT_EQ(static_cast<int32_t>(m.blocks(r.id).size()), m.blocks_for(r.computed));
  }
  for (const Live& r : live) m.free(r.id);
  EXPECT_EQ(m.num_free_blocks(), 63);
  EXPECT_EQ(m.num_requests(), 0u);
  EXPECT_EQ(m.check_invariants(), "");
  EXPECT_GT(refused, 0);
  EXPECT_GT(hits, 0);
}

}  // namespace
}  // namespace tessera
