// paged_attention_rope (RoPE and the cache write inside the decode attention kernel) against
// the two calls it replaces, qkv_rope_cache then paged_attention: the same attention output
// and the same caches, bit for bit, over head dims, GQA groups (query-head chunks included),
// both RoPE layouts, split counts and batch sizes. Skips without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/fused_ops.h"
#include "backend/cuda/ops.h"
#include "cuda/cuda_test_util.h"

namespace tessera {
namespace {

using cuda::bf16;
using cuda_test::DeviceBuffer;

struct Case {
  int64_t num_heads, num_kv_heads, head_dim;
  RopeLayout layout;
  int64_t seqs;
  int splits;  // 0: attention_num_splits
};

std::vector<bf16> random_bf16(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<bf16> v(n);
  for (auto& x : v) x = __float2bfloat16(d(rng));
  return v;
}

bool same_bits(const std::vector<bf16>& a, const std::vector<bf16>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(bf16)) == 0;
}

TEST(CudaRopeAttention, EqualsRopeCacheThenAttentionBitForBit) {
  REQUIRE_DEVICE();
  std::mt19937 rng(21);
  int num_sms = 0;
  cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, 0);
  const int64_t block_size = 16, max_context = 700;
  for (const Case& c : {Case{32, 8, 128, RopeLayout::kHalf, 5, 0}, Case{32, 8, 128, RopeLayout::kHalf, 70, 0},
                        Case{32, 8, 128, RopeLayout::kInterleaved, 3, 7}, Case{8, 8, 64, RopeLayout::kHalf, 9, 0},
                        Case{24, 2, 128, RopeLayout::kHalf, 4, 3},  // 12 heads per group: 16-row CTAs
                        Case{16, 1, 256, RopeLayout::kInterleaved, 2, 0},  // 2 query-head chunks per KV head
                        Case{32, 4, 64, RopeLayout::kHalf, 1, 1}}) {
    const int64_t nh = c.num_heads, nkv = c.num_kv_heads, hd = c.head_dim, n = c.seqs;
    const int64_t kv_dim = nkv * hd, heads = nh + 2 * nkv;
    // Each sequence: a context of 1..max_context tokens, the last one this step's; its own
    // shuffled blocks (block 0 is the null block).
    std::vector<int32_t> positions(n), token_seq(n), indptr(n + 1, 0), block_ids;
    std::vector<int64_t> slots(n);
    int32_t next_block = 1;
    for (int64_t s = 0; s < n; ++s) {
      const int64_t len = 1 + static_cast<int64_t>(rng() % max_context);
      positions[s] = static_cast<int32_t>(len - 1);
      token_seq[s] = static_cast<int32_t>(s);
      const int64_t nb = (len + block_size - 1) / block_size;
      std::vector<int32_t> mine;
      for (int64_t b = 0; b < nb; ++b) mine.push_back(next_block++);
      std::shuffle(mine.begin(), mine.end(), rng);
      block_ids.insert(block_ids.end(), mine.begin(), mine.end());
      indptr[s + 1] = static_cast<int32_t>(block_ids.size());
      slots[s] = int64_t{mine[positions[s] / block_size]} * block_size + positions[s] % block_size;
    }
    const int64_t cache_elems = next_block * block_size * kv_dim;
    const std::vector<bf16> k0 = random_bf16(cache_elems, rng), v0 = random_bf16(cache_elems, rng);
    const std::vector<bf16> qkv = random_bf16(n * heads * hd, rng);
    std::vector<float> inv_freq(hd / 2);
    for (int64_t i = 0; i < hd / 2; ++i) inv_freq[i] = std::pow(500000.0f, -2.0f * i / hd);

    DeviceBuffer<int32_t> dpos(positions), dseq(token_seq), dptr(indptr), dblocks(block_ids);
    DeviceBuffer<int64_t> dslots(slots);
    DeviceBuffer<float> dfreq(inv_freq);
    DeviceBuffer<bf16> dqkv(qkv), dq(n * nh * hd), ka(k0), va(v0), kb(k0), vb(v0), outa(n * nh * hd),
        outb(n * nh * hd);
    cuda::AttentionMetadata meta;
    meta.positions = dpos.p, meta.token_seq = dseq.p, meta.slot_mapping = dslots.p;
    meta.block_table_indptr = dptr.p, meta.block_table_ids = dblocks.p, meta.num_tokens = n;
    const cuda::AttentionShape shape{nh, nkv, hd, block_size, 1.0f / std::sqrt(static_cast<float>(hd))};
    const int splits = c.splits > 0 ? c.splits : cuda::attention_num_splits(n, nkv, num_sms, max_context);
    const size_t ws_bytes = cuda::attention_workspace_bytes(n, nh, hd, splits);
    DeviceBuffer<char> wsa(std::max<size_t>(ws_bytes, 1)), wsb(std::max<size_t>(ws_bytes, 1));
    CUDA_OK(cudaMemset(wsa.p, 0, wsa.n));
    CUDA_OK(cudaMemset(wsb.p, 0, wsb.n));

    cuda::qkv_rope_cache(dqkv.p, nullptr, nullptr, nullptr, 1e-5f, dpos.p, dslots.p, n, nh, nkv, hd, dfreq.p, c.layout,
                         dq.p, ka.p, va.p, nullptr);
    cuda::paged_attention(dq.p, ka.p, va.p, meta, shape, splits, wsa.p, outa.p, nullptr);
    ASSERT_TRUE(cuda::paged_attention_rope_supported(shape));
    cuda::paged_attention_rope({dqkv.p, dfreq.p, c.layout}, kb.p, vb.p, meta, shape, splits, wsb.p, outb.p, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    const std::string what = "heads " + std::to_string(nh) + "/" + std::to_string(nkv) + ", head_dim " +
                             std::to_string(hd) + ", " + std::to_string(n) + " sequences, " + std::to_string(splits) +
                             " splits";
    EXPECT_TRUE(same_bits(outb.download(), outa.download())) << "attention output, " << what;
    EXPECT_TRUE(same_bits(kb.download(), ka.download())) << "K cache, " << what;
    EXPECT_TRUE(same_bits(vb.download(), va.download())) << "V cache, " << what;
  }
}

}  // namespace
}  // namespace tessera
