// The forward pass over a flat batch mixing sequences, prefill chunks and decodes gives
// the same logits as running each sequence alone, token by token.
#include <gtest/gtest.h>

#include <numeric>

#include "common/test_paths.h"
#include "model/model.h"

namespace tessera {
namespace {

TEST(BatchedForward, MixedBatchEqualsSequentialDecode) {
  const std::string path = testing::test_data() + "/stories260K/stories260K-f32.gguf";
  if (!testing::exists(path)) GTEST_SKIP() << "missing " << path;
  auto model = load_model(path);
  ASSERT_TRUE(model.ok()) << model.error();
  const ModelConfig& c = (*model)->config();
  const int64_t bs = 16;
  KvCacheShape shape{c.num_hidden_layers, 32, bs, c.num_key_value_heads, c.head_dim};

  // Three sequences of different lengths; reference: one token per forward, alone.
  const std::vector<std::vector<int32_t>> seqs = {
      {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267},
      {1, 300, 301, 302},
      {1, 450, 12, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130}};
  const std::vector<std::vector<int32_t>> tables = {{3, 9}, {5}, {1, 7, 2}};
  std::vector<std::vector<std::vector<float>>> ref(seqs.size());  // [seq][pos][vocab]
  for (size_t s = 0; s < seqs.size(); ++s) {
    KvCache cache(shape);
    for (size_t p = 0; p < seqs[s].size(); ++p) {
      ForwardBatch b;
      b.add_sequence(&seqs[s][p], 1, static_cast<int32_t>(p), tables[s], bs, true);
      std::vector<float> logits(c.vocab_size);
      (*model)->forward(b, cache, logits.data());
      ref[s].push_back(logits);
    }
  }

  // Batched: step 1 prefills seq0[0..12), seq1 all, seq2[0..20); step 2 mixes a decode of
  // seq1-style continuation with the remaining chunks of seq0 and seq2.
  KvCache cache(shape);
  auto run = [&](const std::vector<std::tuple<int, int, int>>& parts) {  // (seq, start, n)
    ForwardBatch b;
    for (auto [s, start, n] : parts) {
      b.add_sequence(seqs[s].data() + start, n, start, tables[s], bs, false);
    }
    // Ask logits for every token so each position can be compared.
    b.logits_indices.resize(b.num_tokens());
    std::iota(b.logits_indices.begin(), b.logits_indices.end(), 0);
    std::vector<float> logits(b.num_tokens() * c.vocab_size);
    (*model)->forward(b, cache, logits.data());
    int64_t t = 0;
    for (auto [s, start, n] : parts) {
      for (int i = 0; i < n; ++i, ++t) {
        for (int64_t v = 0; v < c.vocab_size; ++v) {
          ASSERT_NEAR(logits[t * c.vocab_size + v], ref[s][start + i][v], 1e-4)
              << "seq " << s << " pos " << start + i << " vocab " << v;
        }
      }
    }
  };
  run({{0, 0, 12}, {1, 0, 3}, {2, 0, 20}});
  run({{1, 3, 1}, {0, 12, 8}, {2, 20, 15}});
}

}  // namespace
}  // namespace tessera
