// Paged attention, RoPE, RMSNorm and SiLU against straightforward double-precision
// references, on batches that mix prefill chunks and decodes with scattered block tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/ops.h"

namespace tessera {
namespace {

struct SeqSpec {
  int32_t start_pos;  // tokens already in the cache
  int32_t num_new;    // tokens this step
};

// Reference: dense K/V per sequence [pos, kv_heads, head_dim].
void reference_attention(const std::vector<float>& q, const std::vector<std::vector<float>>& dense_k,
                         const std::vector<std::vector<float>>& dense_v,
                         const std::vector<SeqSpec>& seqs, int64_t nh, int64_t nkv, int64_t hd,
                         int64_t window, std::vector<float>& out) {
  int64_t t = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (int32_t i = 0; i < seqs[s].num_new; ++i, ++t) {
      const int64_t pos = seqs[s].start_pos + i;
      for (int64_t h = 0; h < nh; ++h) {
        const int64_t kvh = h / (nh / nkv);
        const int64_t first = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
        std::vector<double> sc;
        for (int64_t p = first; p <= pos; ++p) {
          double d = 0;
          for (int64_t e = 0; e < hd; ++e) d += double(q[(t * nh + h) * hd + e]) * dense_k[s][(p * nkv + kvh) * hd + e];
          sc.push_back(d / std::sqrt(double(hd)));
        }
        const double mx = *std::max_element(sc.begin(), sc.end());
        double sum = 0;
        for (double& x : sc) sum += (x = std::exp(x - mx));
        for (int64_t e = 0; e < hd; ++e) {
          double acc = 0;
          for (int64_t p = first; p <= pos; ++p) acc += sc[p - first] / sum * dense_v[s][(p * nkv + kvh) * hd + e];
          out[(t * nh + h) * hd + e] = static_cast<float>(acc);
        }
      }
    }
  }
}

// dtype: the cache's element type; the reference keeps the exact values, so the bound is
// the element's rounding (16-bit caches) on top of the fp32 sums'.
void run_attention_case(int64_t nh, int64_t nkv, int64_t hd, int64_t window, KvDtype dtype = KvDtype::kFloat32) {
  const int64_t bs = 4;
  const std::vector<SeqSpec> seqs = {{0, 7}, {13, 1}, {5, 9}, {0, 1}, {30, 1}};
  std::mt19937 rng(42);
  std::normal_distribution<float> nd;
  const int64_t kv_dim = nkv * hd;
  // Blocks handed out in a shuffled order so tables are not contiguous; block 0 unused.
  int64_t total_blocks = 1;
  for (auto& s : seqs) total_blocks += (s.start_pos + s.num_new + bs - 1) / bs;
  std::vector<int32_t> free_blocks(total_blocks - 1);
  std::iota(free_blocks.begin(), free_blocks.end(), 1);
  std::shuffle(free_blocks.begin(), free_blocks.end(), rng);
  const size_t cache_bytes = static_cast<size_t>(total_blocks * bs * kv_dim * kv_dtype_bytes(dtype));
  std::vector<uint8_t> k_cache(cache_bytes, 0xff), v_cache(cache_bytes, 0xff);  // NaN in every dtype

  ForwardBatch batch;
  std::vector<std::vector<float>> dense_k, dense_v;
  std::vector<float> new_k, new_v;
  size_t next_block = 0;
  for (const SeqSpec& s : seqs) {
    const int64_t len = s.start_pos + s.num_new;
    std::vector<int32_t> table;
    for (int64_t b = 0; b < (len + bs - 1) / bs; ++b) table.push_back(free_blocks[next_block++]);
    std::vector<float> dk(len * kv_dim), dv(len * kv_dim);
    for (auto& x : dk) x = nd(rng);
    for (auto& x : dv) x = nd(rng);
    // The cached prefix goes into the paged cache by a step of its own; the new tokens by this one.
    if (s.start_pos > 0) {
      ForwardBatch prefix;
      std::vector<int32_t> ids(s.start_pos, 3);
      prefix.add_sequence(ids.data(), s.start_pos, 0, table, bs, false);
      cpu::write_kv_cache(dk.data(), dv.data(), prefix, kv_dim, k_cache.data(), v_cache.data(), dtype);
    }
    new_k.insert(new_k.end(), dk.begin() + s.start_pos * kv_dim, dk.end());
    new_v.insert(new_v.end(), dv.begin() + s.start_pos * kv_dim, dv.end());
    std::vector<int32_t> ids(s.num_new, 3);
    batch.add_sequence(ids.data(), s.num_new, s.start_pos, table, bs, true);
    dense_k.push_back(std::move(dk));
    dense_v.push_back(std::move(dv));
  }
  cpu::write_kv_cache(new_k.data(), new_v.data(), batch, kv_dim, k_cache.data(), v_cache.data(), dtype);
  const int64_t n = batch.num_tokens();
  std::vector<float> q(n * nh * hd);
  for (auto& x : q) x = nd(rng);
  std::vector<float> out(n * nh * hd), ref(n * nh * hd);
  cpu::AttentionShape shape{nh, nkv, hd, bs, 1.0f / std::sqrt(float(hd)), window};
  cpu::paged_attention(q.data(), k_cache.data(), v_cache.data(), batch, shape, out.data(), dtype);
  reference_attention(q, dense_k, dense_v, seqs, nh, nkv, hd, window, ref);
  const double bound = dtype == KvDtype::kFloat32 ? 2e-5 : dtype == KvDtype::kFloat16 ? 4e-3 : 3e-2;
  double worst = 0;
  for (int64_t i = 0; i < n * nh * hd; ++i) {
    ASSERT_NEAR(out[i], ref[i], bound) << "at " << i << ", " << kv_dtype_name(dtype) << " KV";
    worst = std::max(worst, std::fabs(double(out[i]) - ref[i]));
  }
  // A 16-bit cache rounds: exact agreement would mean the values were never converted.
  if (dtype != KvDtype::kFloat32) EXPECT_GT(worst, 1e-6) << kv_dtype_name(dtype);
}

TEST(PagedAttention, MixedBatchGqa) { run_attention_case(8, 2, 64, 0); }
TEST(PagedAttention, MultiHeadOddHeadDim) { run_attention_case(3, 3, 12, 0); }
TEST(PagedAttention, SlidingWindow) { run_attention_case(4, 1, 16, 5); }
TEST(PagedAttention, Float16CacheRoundsOnlyTheElements) {
  run_attention_case(8, 2, 64, 0, KvDtype::kFloat16);
  run_attention_case(3, 3, 12, 0, KvDtype::kFloat16);  // the scalar tails
}
TEST(PagedAttention, Bfloat16CacheRoundsOnlyTheElements) {
  run_attention_case(8, 2, 64, 0, KvDtype::kBfloat16);
  run_attention_case(4, 1, 16, 5, KvDtype::kBfloat16);
}

TEST(Rope, HalfAndInterleavedAgreeUnderPermutation) {
  // Interleaved RoPE on permuted rows equals half-layout RoPE, permuted: the identity that
  // lets GGUF llama checkpoints keep their permuted q/k weights.
  ModelConfig c;
  c.head_dim = 8;
  c.rope_theta = 10000;
  std::vector<float> inv(4);
  cpu::rope_inv_freq(c, nullptr, inv.data());
  std::vector<float> x = {0.1f, -0.4f, 0.9f, 1.3f, -0.2f, 0.5f, 0.7f, -1.1f};
  // HF -> interleaved: element i of the first half goes to 2i, of the second half to 2i+1.
  std::vector<float> xi(8);
  for (int i = 0; i < 4; ++i) {
    xi[2 * i] = x[i];
    xi[2 * i + 1] = x[i + 4];
  }
  const int32_t pos = 37;
  cpu::apply_rope(x.data(), &pos, 1, 1, 8, inv.data(), RopeLayout::kHalf);
  cpu::apply_rope(xi.data(), &pos, 1, 1, 8, inv.data(), RopeLayout::kInterleaved);
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(xi[2 * i], x[i]);
    EXPECT_FLOAT_EQ(xi[2 * i + 1], x[i + 4]);
  }
  // Against the formula for one pair.
  std::vector<float> y = {1, 0, 0, 0, 0, 0, 0, 0};
  cpu::apply_rope(y.data(), &pos, 1, 1, 8, inv.data(), RopeLayout::kHalf);
  EXPECT_NEAR(y[0], std::cos(37.0), 1e-5);
  EXPECT_NEAR(y[4], std::sin(37.0), 1e-5);
}

TEST(Rope, Llama3ScalingMatchesFormula) {
  ModelConfig c;
  c.head_dim = 128;
  c.rope_theta = 500000;
  c.rope_scaling.type = RopeScaling::Type::kLlama3;
  c.rope_scaling.factor = 8;
  c.rope_scaling.low_freq_factor = 1;
  c.rope_scaling.high_freq_factor = 4;
  c.rope_scaling.original_max_position_embeddings = 8192;
  std::vector<float> inv(64);
  cpu::rope_inv_freq(c, nullptr, inv.data());
  for (int i = 0; i < 64; ++i) {
    const double base = 1.0 / std::pow(500000.0, 2.0 * i / 128);
    const double wavelen = 2 * M_PI / base;
    double expect = base;
    if (wavelen > 8192) expect = base / 8;
    else if (wavelen >= 2048) {
      const double smooth = (8192 / wavelen - 1) / 3;
      expect = (1 - smooth) * base / 8 + smooth * base;
    }
    EXPECT_NEAR(inv[i], expect, 1e-6 * base) << i;
  }
  EXPECT_FLOAT_EQ(inv[0], 1.0f);             // high frequency kept
  EXPECT_NEAR(inv[63], 1.0 / std::pow(500000.0, 126.0 / 128) / 8, 1e-12);  // low frequency slowed
}

TEST(RmsNorm, MatchesFormula) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, -12};
  std::vector<float> w = {0.5f, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 3};
  std::vector<float> out(12);
  cpu::rms_norm(x.data(), w.data(), 1e-5f, 1, 12, out.data());
  double ss = 0;
  for (float v : x) ss += v * v;
  const double inv = 1 / std::sqrt(ss / 12 + 1e-5);
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(out[i], x[i] * inv * w[i], 1e-5);
}

TEST(SiluAndMul, MatchesFormula) {
  std::vector<float> g(19), u(19), out(19);
  for (int i = 0; i < 19; ++i) {
    g[i] = -9.0f + i;
    u[i] = 0.5f * i - 2;
  }
  cpu::silu_and_mul(g.data(), u.data(), 1, 19, out.data());
  for (int i = 0; i < 19; ++i) EXPECT_NEAR(out[i], g[i] / (1 + std::exp(-double(g[i]))) * u[i], 1e-5 * (1 + std::fabs(u[i] * g[i])));
}

}  // namespace
}  // namespace tessera
