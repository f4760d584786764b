// The GPU sampler (cuda::sample_rows, cuda::top_logprobs) against its CPU twin
// (sample_token) and the CPU logprobs, over mixed rows of parameters and logits
// (masked, tied, peaked) at small and large vocabularies. Device and host libms differ by
// ulps in logf / log1pf / expf, so a differing token is allowed only where the two tokens'
// Gumbel scores nearly tie, and such cases are counted (expected: none). Skips without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/sampling.h"
#include "cuda/cuda_test_util.h"
#include "sample/token_sampler.h"
#include "sample/logit_adjustments.h"
#include "sample/sampler.h"

namespace tessera {
namespace {

using cuda_test::DeviceBuffer;

enum class Kind { kNormal, kMasked, kTied, kPeaked, kSparse };

std::vector<float> make_logits(Kind kind, int64_t vocab, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> l(vocab);
  for (auto& x : l) x = d(rng);
  switch (kind) {
    case Kind::kNormal:
      break;
    case Kind::kMasked:  // 30% masked, a few NaN (treated as -inf)
      for (int64_t i = 0; i < vocab; ++i) {
        if (rng() % 10 < 3) l[i] = -INFINITY;
      }
      for (int i = 0; i < 5; ++i) l[rng() % vocab] = NAN;
      break;
    case Kind::kTied:  // multiples of 0.5: large groups of equal logits at every cut
      for (auto& x : l) x = std::round(x * 2.0f) / 2.0f;
      break;
    case Kind::kPeaked:
      l[rng() % vocab] = 25.0f;
      l[rng() % vocab] = 23.0f;
      break;
    case Kind::kSparse:  // all masked but three
      std::fill(l.begin(), l.end(), -INFINITY);
      for (int i = 0; i < 3; ++i) l[rng() % vocab] = d(rng);
      break;
  }
  return l;
}

struct Config {
  float t;
  int32_t top_k;
  float top_p, min_p;
};

const std::vector<Config> kConfigs = {
    {0.0f, 0, 1.0f, 0.0f},     // greedy
    {0.0f, 5, 0.5f, 0.1f},     // greedy ignores the rest
    {0.7f, 0, 1.0f, 0.0f},     // plain temperature
    {1.0f, 1, 1.0f, 0.0f},     // top-k 1
    {0.8f, 5, 1.0f, 0.0f},     // top-k 5
    {1.0f, 50, 1.0f, 0.0f},    // top-k 50
    {0.7f, 0, 0.9f, 0.0f},     // top-p
    {1.0f, 0, 1.0f, 0.1f},     // min-p
    {0.7f, 50, 0.9f, 0.1f},    // all three
    {1.2f, 5, 0.5f, 0.0f},     // top-k + top-p
    {1.0f, 0, 0.95f, 0.02f},   // top-p + min-p
    {0.6f, 3000, 1.0f, 0.0f},  // k beyond the shared-memory candidates
    {1.5f, 0, 0.99f, 0.0f},    // a large nucleus
    {2.0f, 20, 0.8f, 0.0f},
};
const std::vector<Kind> kKinds = {Kind::kNormal, Kind::kMasked, Kind::kTied, Kind::kPeaked, Kind::kSparse};

struct Rows {
  std::vector<float> logits;  // [n, vocab]
  std::vector<SamplingRow> params;
};

// Every (config, kind) pair at `offsets` consecutive offsets, each kind with its own logits.
Rows make_rows(int64_t vocab, int offsets, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<float>> by_kind;
  for (Kind k : kKinds) by_kind.push_back(make_logits(k, vocab, rng));
  Rows rows;
  for (size_t c = 0; c < kConfigs.size(); ++c) {
    for (size_t k = 0; k < kKinds.size(); ++k) {
      for (int o = 0; o < offsets; ++o) {
        const Config& cf = kConfigs[c];
        rows.logits.insert(rows.logits.end(), by_kind[k].begin(), by_kind[k].end());
        rows.params.push_back(SamplingRow{cf.t, cf.top_k, cf.top_p, cf.min_p, 1000 * c + 17 * k + seed, 5u + o});
      }
    }
  }
  return rows;
}

TEST(CudaSampling, SampleRowsMatchesTheCpuTwin) {
  REQUIRE_DEVICE();
  int64_t draws = 0, near_ties = 0, hard = 0;
  for (int64_t vocab : {1000, 49152, 128256}) {
    const int offsets = vocab > 100000 ? 8 : 16;
    Rows rows = make_rows(vocab, offsets, static_cast<uint32_t>(vocab));
    const int64_t n = static_cast<int64_t>(rows.params.size());
    DeviceBuffer<float> dl(rows.logits);
    DeviceBuffer<SamplingRow> dp(rows.params);
    DeviceBuffer<int32_t> dnext(n);
    cuda::sample_rows(dl.p, n, vocab, dp.p, dnext.p, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    const std::vector<int32_t> next = dnext.download();
    // Deterministic: the same call again gives the same tokens.
    cuda::sample_rows(dl.p, n, vocab, dp.p, dnext.p, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(dnext.download(), next) << "vocab " << vocab;
    for (int64_t r = 0; r < n; ++r) {
      const float* row = rows.logits.data() + r * vocab;
      const SamplingRow& p = rows.params[r];
      const SampleResult want = sample_token_detail(row, vocab, p);
      ++draws;
      const int32_t got = next[r];
      ASSERT_GE(got, 0) << "row " << r;
      ASSERT_LT(got, vocab) << "row " << r;
      if (got == want.token) continue;
      const std::string what = "vocab " + std::to_string(vocab) + " row " + std::to_string(r) + " T " +
                               std::to_string(p.temperature) + " top_k " + std::to_string(p.top_k) + " top_p " +
                               std::to_string(p.top_p) + " min_p " + std::to_string(p.min_p) + ": gpu " +
                               std::to_string(got) + " cpu " + std::to_string(want.token);
      const bool kept = std::binary_search(want.kept.begin(), want.kept.end(), got);
      if (want.greedy || !kept) {
        ++hard;
        ADD_FAILURE() << what << (want.greedy ? " (greedy)" : " (gpu token not in the cpu's kept set)");
        continue;
      }
      const float sg = sampling_score(row[got], want.max_logit, p, got);
      const float sc = sampling_score(row[want.token], want.max_logit, p, want.token);
      if (std::fabs(sg - sc) <= 1e-4f * std::max(1.0f, std::fabs(sc))) {
        ++near_ties;
        std::printf("near tie: %s scores %.9g %.9g\n", what.c_str(), sg, sc);
      } else {
        ++hard;
        ADD_FAILURE() << what << " scores gpu " << sg << " cpu " << sc;
      }
    }
  }
  std::printf("sample_rows: %lld draws, %lld near-tie differences, %lld hard differences\n",
              static_cast<long long>(draws), static_cast<long long>(near_ties), static_cast<long long>(hard));
  EXPECT_EQ(hard, 0);
  EXPECT_LE(near_ties * 200, draws);  // at most 0.5%
}

TEST(CudaSampling, SampleRowsReplaysInACudaGraphWithNewOffsets) {
  REQUIRE_DEVICE();
  const int64_t vocab = 49152;
  Rows rows = make_rows(vocab, 1, 77);
  const int64_t n = static_cast<int64_t>(rows.params.size());
  DeviceBuffer<float> dl(rows.logits);
  DeviceBuffer<SamplingRow> dp(rows.params);
  DeviceBuffer<int32_t> dnext(n);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  cuda::sample_rows(dl.p, n, vocab, dp.p, dnext.p, stream);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (uint64_t step = 0; step < 3; ++step) {
    for (auto& p : rows.params) p.offset = 100 + step;
    CUDA_OK(cudaMemcpyAsync(dp.p, rows.params.data(), n * sizeof(SamplingRow), cudaMemcpyHostToDevice,
                                     stream));
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    const std::vector<int32_t> got = dnext.download();
    int64_t differ = 0;
    for (int64_t r = 0; r < n; ++r) {
      differ += got[r] != sample_token(rows.logits.data() + r * vocab, vocab, rows.params[r]);
    }
    EXPECT_LE(differ, 1) << "step " << step;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(CudaSampling, TopLogprobsMatchCpuLogSoftmax) {
  REQUIRE_DEVICE();
  std::mt19937 rng(5);
  for (int64_t vocab : {10, 1000, 49152, 128256}) {
    std::vector<float> logits;
    std::vector<int32_t> chosen;
    const std::vector<Kind> kinds = {Kind::kNormal, Kind::kTied, Kind::kPeaked, Kind::kSparse, Kind::kNormal};
    for (Kind k : kinds) {
      std::vector<float> l = make_logits(k, vocab, rng);
      if (k == Kind::kNormal && !logits.empty()) {  // masked, without NaN (the CPU would spread it)
        for (auto& x : l) {
          if (rng() % 4 == 0) x = -INFINITY;
        }
      }
      logits.insert(logits.end(), l.begin(), l.end());
      chosen.push_back(static_cast<int32_t>(rng() % vocab));
    }
    chosen[1] = -1;  // out of range: -inf
    const int64_t n = static_cast<int64_t>(kinds.size());
    for (int k : {0, 1, 5, 20}) {
      DeviceBuffer<float> dl(logits), dtop_lp(n * std::max(k, 1)), dchosen_lp(n);
      DeviceBuffer<int32_t> dchosen(chosen), dtop_ids(n * std::max(k, 1));
      cuda::top_logprobs(dl.p, n, vocab, k, dchosen.p, dtop_ids.p, dtop_lp.p, dchosen_lp.p, nullptr);
      CUDA_OK(cudaDeviceSynchronize());
      const std::vector<int32_t> ids = dtop_ids.download();
      const std::vector<float> lps = dtop_lp.download(), clp = dchosen_lp.download();
      std::vector<float> lp(vocab);
      for (int64_t r = 0; r < n; ++r) {
        const std::string what = "vocab " + std::to_string(vocab) + " k " + std::to_string(k) + " row " +
                                 std::to_string(r);
        log_softmax(logits.data() + r * vocab, vocab, lp.data());
        if (chosen[r] >= 0 && !std::isinf(lp[chosen[r]])) {
          EXPECT_NEAR(clp[r], lp[chosen[r]], 1e-4) << what;
        } else {
          EXPECT_EQ(clp[r], -INFINITY) << what;
        }
        const PositionLogprobs want = top_logprobs(lp.data(), vocab, k);
        for (int j = 0; j < k; ++j) {
          const int32_t id = ids[r * k + j];
          const float v = lps[r * k + j];
          if (j >= static_cast<int>(want.size())) {
            EXPECT_EQ(id, -1) << what;
            continue;
          }
          ASSERT_GE(id, 0) << what << " position " << j;
          ASSERT_LT(id, vocab) << what << " position " << j;
          // Distinct logits can round to equal logprobs on the CPU (then it orders by id):
          // a different id must then carry the same value.
          if (id != want[j].first) {
            EXPECT_FALSE(std::isinf(want[j].second)) << what << " position " << j << " gpu id " << id;
            EXPECT_NEAR(lp[id], want[j].second, 1e-5) << what << " position " << j << " gpu id " << id
                                                       << " cpu id " << want[j].first;
          }
          if (std::isinf(want[j].second)) {
            EXPECT_EQ(v, want[j].second) << what << " position " << j;
          } else {
            EXPECT_NEAR(v, want[j].second, 1e-4) << what << " position " << j;
          }
        }
      }
    }
  }
}

// Not a check: the time per call at decode-like batch sizes, for the log.
// Bias, min_tokens' masks and penalties on the device give the very floats process_logits
// computes on the host (the same adjust_logit, products never fused with the subtraction).
TEST(CudaSampling, LogitAdjustmentsMatchProcessLogitsBitForBit) {
  REQUIRE_DEVICE();
  std::mt19937 rng(9);
  const int64_t vocab = 5000;
  const std::vector<int32_t> eos = {2, 7};
  std::vector<float> logits, want;
  std::vector<int32_t> indptr = {0};
  std::vector<LogitAdjustment> all;
  for (int r = 0; r < 24; ++r) {
    SamplingParams p;
    if (r % 2 == 0) p.repetition_penalty = 0.5f + static_cast<float>(rng() % 200) / 100.0f;
    if (r % 3 == 0) p.frequency_penalty = static_cast<float>(rng() % 400) / 100.0f - 2.0f;
    if (r % 4 == 0) p.presence_penalty = static_cast<float>(rng() % 400) / 100.0f - 2.0f;
    if (r % 5 == 0) p.logit_bias = {{static_cast<int32_t>(rng() % vocab), 3.5f}, {7, -1.25f}};
    if (r % 6 == 0) {
      p.min_tokens = 50;
      p.stop_token_ids = {11, 4999};
    }
    std::vector<int32_t> prompt, output;
    for (int i = 0; i < 40 + r; ++i) prompt.push_back(static_cast<int32_t>(rng() % 300));
    for (int i = 0; i < 3 * r; ++i) output.push_back(static_cast<int32_t>(rng() % 300));
    std::vector<float> l = make_logits(r % 3 == 0 ? Kind::kTied : Kind::kNormal, vocab, rng);
    logits.insert(logits.end(), l.begin(), l.end());
    process_logits(l.data(), vocab, p, prompt, output, eos);
    want.insert(want.end(), l.begin(), l.end());
    const std::vector<LogitAdjustment> adj = logit_adjustments(p, prompt, output, eos, vocab);
    all.insert(all.end(), adj.begin(), adj.end());
    indptr.push_back(static_cast<int32_t>(all.size()));
  }
  ASSERT_GT(all.size(), 500u);
  const int64_t n = static_cast<int64_t>(indptr.size()) - 1;
  DeviceBuffer<float> dl(logits);
  DeviceBuffer<int32_t> dptr(indptr);
  DeviceBuffer<LogitAdjustment> dadj(all);
  cuda::apply_logit_adjustments(dl.p, n, vocab, dptr.p, dadj.p, nullptr);
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<float> got = dl.download();
  int64_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) differ += std::memcmp(&got[i], &want[i], sizeof(float)) != 0;
  EXPECT_EQ(differ, 0) << "of " << got.size() << " logits";
}

// Grammar masks: rows with a bitmask row keep exactly their allowed tokens (the rest -inf, the
// kept logits untouched), rows marked -1 are unchanged; vocabularies not a multiple of 32.
TEST(CudaSampling, TokenBitmaskMasksExactlyTheClearBits) {
  REQUIRE_DEVICE();
  std::mt19937 rng(5);
  for (int64_t vocab : {64, 1000, 49152 + 7}) {
    const int64_t n = 5, words = (vocab + 31) / 32;
    std::vector<float> logits(static_cast<size_t>(n * vocab));
    std::normal_distribution<float> d(0.0f, 3.0f);
    for (float& x : logits) x = d(rng);
    const std::vector<int32_t> mask_rows = {1, -1, 0, 2, -1};
    std::vector<uint32_t> bits(static_cast<size_t>(3 * words));
    for (size_t w = 0; w < bits.size(); ++w) {
      bits[w] = w % 7 == 0 ? 0xffffffffu : w % 5 == 0 ? 0u : static_cast<uint32_t>(rng());
    }
    DeviceBuffer<float> dl(logits);
    DeviceBuffer<int32_t> drows(mask_rows);
    DeviceBuffer<uint32_t> dbits(bits);
    cuda::apply_token_bitmask(dl.p, n, vocab, drows.p, dbits.p, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    const std::vector<float> got = dl.download();
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t t = 0; t < vocab; ++t) {
        const size_t i = static_cast<size_t>(r * vocab + t);
        const int32_t m = mask_rows[static_cast<size_t>(r)];
        const bool allowed = m < 0 || ((bits[static_cast<size_t>(m * words + t / 32)] >> (t % 32)) & 1u);
        if (allowed) {
          ASSERT_EQ(got[i], logits[i]) << "vocab " << vocab << " row " << r << " token " << t;
        } else {
          ASSERT_EQ(got[i], -INFINITY) << "vocab " << vocab << " row " << r << " token " << t;
        }
      }
    }
  }
}

TEST(CudaSampling, TimingReport) {
  REQUIRE_DEVICE();
  const int64_t vocab = 128256;
  std::mt19937 rng(9);
  const std::vector<float> base = make_logits(Kind::kNormal, vocab, rng);
  for (int64_t n : {1, 8, 64, 256}) {
    std::vector<float> logits;
    for (int64_t r = 0; r < n; ++r) logits.insert(logits.end(), base.begin(), base.end());
    DeviceBuffer<float> dl(logits);
    DeviceBuffer<int32_t> dnext(n);
    for (const Config& c : kConfigs) {
      if (c.t == 0.0f && c.top_k != 0) continue;
      std::vector<SamplingRow> params(n, SamplingRow{c.t, c.top_k, c.top_p, c.min_p, 1, 0});
      DeviceBuffer<SamplingRow> dp(params);
      cudaEvent_t a, b;
      cudaEventCreate(&a);
      cudaEventCreate(&b);
      cuda::sample_rows(dl.p, n, vocab, dp.p, dnext.p, nullptr);  // warm-up
      const int iters = 20;
      cudaEventRecord(a);
      for (int i = 0; i < iters; ++i) cuda::sample_rows(dl.p, n, vocab, dp.p, dnext.p, nullptr);
      cudaEventRecord(b);
      CUDA_OK(cudaEventSynchronize(b));
      float ms = 0;
      cudaEventElapsedTime(&ms, a, b);
      std::printf("sample_rows vocab %lld n %4lld T %.1f top_k %4d top_p %.2f min_p %.2f: %8.1f us\n",
                  static_cast<long long>(vocab), static_cast<long long>(n), c.t, c.top_k, c.top_p, c.min_p,
                  1000.0f * ms / iters);
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  }
}

}  // namespace
}  // namespace tessera
