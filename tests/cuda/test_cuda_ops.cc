// Every CUDA op against its CPU twin (src/backend/cpu) on the same inputs rounded to the
// element type (bf16 and f16), over shape sweeps; the CPU computes in fp32, so the bound is the
// type's output rounding plus a little accumulation-order noise. Skips when no CUDA device is usable (CI compiles it).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/cuda/matmul.h"
#include "backend/cuda/ops.h"
#include "cuda/cuda_test_util.h"
#include "sample/sampler.h"

namespace tessera {
namespace {

using cuda::bf16;

using namespace cuda_test;  // NOLINT(google-build-using-namespace): the test helpers

// The elementwise ops and the GEMM, once per element type (CudaOpsOfEachType/bf16.*, /f16.*).
template <typename T>
class CudaOpsOfEachType : public ::testing::Test {};
TYPED_TEST_SUITE(CudaOpsOfEachType, ElemTypes, ElemTypeNames);

TYPED_TEST(CudaOpsOfEachType, RmsNormMatchesCpu) {
  REQUIRE_DEVICE();
  std::mt19937 rng(1);
  // 60: the scalar kernel (dim % 8 != 0); 64 .. 5120: 1, 2 or 4 16-byte pieces per thread;
  // 10240: more than the vectorized kernel holds (scalar again).
  for (int64_t dim : {60, 64, 576, 2048, 4096, 5120, 10240}) {
    for (int64_t n : {1, 7, 33}) {
      ElemData<TypeParam> x(n * dim, rng, 2.0f), w(dim, rng);
      std::vector<float> want(n * dim);
      cpu::rms_norm(x.f.data(), w.f.data(), 1e-5f, n, dim, want.data());
      DeviceBuffer<TypeParam> dx(x.h), dw(w.h), dout(n * dim);
      cuda::rms_norm(dx.p, dw.p, 1e-5f, n, dim, dout.p, nullptr);
      CUDA_OK(cudaDeviceSynchronize());
      expect_close(dout.download(), want, rel_bound<TypeParam>(), 1e-3f, "rms_norm dim " + std::to_string(dim));
      // In place.
      cuda::rms_norm(dx.p, dw.p, 1e-5f, n, dim, dx.p, nullptr);
      CUDA_OK(cudaDeviceSynchronize());
      expect_close(dx.download(), want, rel_bound<TypeParam>(), 1e-3f, "rms_norm in place");
    }
  }
}

TYPED_TEST(CudaOpsOfEachType, FusedAddRmsNormEqualsAddThenNorm) {
  REQUIRE_DEVICE();
  std::mt19937 rng(2);
  for (int64_t dim : {60, 64, 4096, 5120, 10240}) {
    const int64_t n = 9;
    ElemData<TypeParam> x(n * dim, rng), r(n * dim, rng, 4.0f), w(dim, rng);
    // CPU: the residual rounded to the element type after the add, then normalized.
    std::vector<float> sum(n * dim), want(n * dim);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = round_to<TypeParam>(x.f[i] + r.f[i]);
    cpu::rms_norm(sum.data(), w.f.data(), 1e-6f, n, dim, want.data());
    DeviceBuffer<TypeParam> dx(x.h), dr(r.h), dw(w.h);
    cuda::fused_add_rms_norm(dx.p, dr.p, dw.p, 1e-6f, n, dim, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    expect_close(dr.download(), sum, 0.0f, 0.0f, "residual");
    expect_close(dx.download(), want, rel_bound<TypeParam>(), 1e-3f, "normalized");
  }
}

TYPED_TEST(CudaOpsOfEachType, SiluAndMulMatchesCpu) {
  REQUIRE_DEVICE();
  std::mt19937 rng(3);
  for (int64_t inter : {1, 172, 14336}) {
    const int64_t n = 5;
    ElemData<TypeParam> g(n * inter, rng, 3.0f), u(n * inter, rng);
    std::vector<float> want(n * inter);
    cpu::silu_and_mul(g.f.data(), u.f.data(), n, inter, want.data());
    DeviceBuffer<TypeParam> dg(g.h), du(u.h), dout(n * inter);
    cuda::silu_and_mul(dg.p, du.p, n, inter, dout.p, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    expect_close(dout.download(), want, rel_bound<TypeParam>(), 1e-4f, "silu_and_mul inter " + std::to_string(inter));
  }
}

TYPED_TEST(CudaOpsOfEachType, RopeMatchesCpuBothLayoutsWithLlama3Scaling) {
  REQUIRE_DEVICE();
  std::mt19937 rng(4);
  for (int64_t head_dim : {64, 128}) {
    ModelConfig c;
    c.head_dim = head_dim;
    c.rope_theta = 500000.0;
    c.rope_scaling.type = RopeScaling::Type::kLlama3;
    c.rope_scaling.factor = 8.0;
    c.rope_scaling.low_freq_factor = 1.0;
    c.rope_scaling.high_freq_factor = 4.0;
    c.rope_scaling.original_max_position_embeddings = 8192;
    std::vector<float> inv_freq(head_dim / 2);
    cpu::rope_inv_freq(c, nullptr, inv_freq.data());
    for (RopeLayout layout : {RopeLayout::kHalf, RopeLayout::kInterleaved}) {
      for (int64_t heads : {1, 8, 32}) {
        const int64_t tokens = 17;
        std::vector<int32_t> pos(tokens);
        for (auto& p : pos) p = static_cast<int32_t>(rng() % 131072);
        pos[0] = 0;
        ElemData<TypeParam> x(tokens * heads * head_dim, rng);
        std::vector<float> want = x.f;
        cpu::apply_rope(want.data(), pos.data(), tokens, heads, head_dim, inv_freq.data(), layout);
        DeviceBuffer<TypeParam> dx(x.h);
        DeviceBuffer<int32_t> dpos(pos);
        DeviceBuffer<float> dfreq(inv_freq);
        cuda::apply_rope(dx.p, dpos.p, tokens, heads, head_dim, dfreq.p, layout, nullptr);
        CUDA_OK(cudaDeviceSynchronize());
        // Angles up to ~1e5 rad: fp32 argument reduction differs slightly between libms.
        expect_close(dx.download(), want, rel_bound<TypeParam>(), 2e-3f, "rope head_dim " + std::to_string(head_dim));
      }
    }
  }
}

TYPED_TEST(CudaOpsOfEachType, EmbeddingCopiesRowsAndZerosBadIds) {
  REQUIRE_DEVICE();
  std::mt19937 rng(5);
  const int64_t vocab = 1000;
  for (const int64_t dim : {576, 12288, 94}) {  // 16-byte copies (part of a round, 3 rounds); 2-byte copies
    ElemData<TypeParam> table(vocab * dim, rng);
    const std::vector<int32_t> ids = {0, 999, 17, 17, -1, 1000, 512};
    DeviceBuffer<TypeParam> dt(table.h), dout(ids.size() * dim);
    DeviceBuffer<int32_t> dids(ids);
    cuda::embedding(dt.p, vocab, dim, dids.p, static_cast<int64_t>(ids.size()), dout.p, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<float> want(ids.size() * dim, 0.0f);
    for (size_t t = 0; t < ids.size(); ++t) {
      if (ids[t] < 0 || ids[t] >= vocab) continue;
      for (int64_t i = 0; i < dim; ++i) want[t * dim + i] = table.f[ids[t] * dim + i];
    }
    expect_close(dout.download(), want, 0.0f, 0.0f, "embedding dim " + std::to_string(dim));
  }
}

TYPED_TEST(CudaOpsOfEachType, GemmMatchesAFp32Reference) {
  REQUIRE_DEVICE();
  std::mt19937 rng(20);
  cuda::Gemm gemm, tuned;
  tuned.set_tuning(cuda::Gemm::kTuneMaxRows);  // the algorithm a timing picks must be as exact
  struct Shape {
    int64_t n, k, m;
    bool tune = false;
  };
  // Decode and prefill rows; SmolLM2's projections and LM head, Llama-8B's MLP widths; tuned:
  // rows as the engine's decode buckets have them.
  for (const Shape& sh : {Shape{1, 576, 1536}, Shape{7, 576, 49152}, Shape{16, 4096, 1024}, Shape{5, 14336, 4096},
                          Shape{33, 128, 96}, Shape{448, 1024, 2048, true}, Shape{24, 576, 3072, true},
                          Shape{512, 256, 512, true}}) {
    ElemData<TypeParam> x(sh.n * sh.k, rng), w(sh.m * sh.k, rng);
    std::vector<float> want(sh.n * sh.m);
    for (int64_t i = 0; i < sh.n; ++i) {
      for (int64_t j = 0; j < sh.m; ++j) {
        double acc = 0.0;
        for (int64_t p = 0; p < sh.k; ++p) acc += double(x.f[i * sh.k + p]) * w.f[j * sh.k + p];
        want[i * sh.m + j] = static_cast<float>(acc);
      }
    }
    DeviceBuffer<TypeParam> dx(x.h), dw(w.h), dout(sh.n * sh.m);
    const std::string err = (sh.tune ? tuned : gemm).matmul(dx.p, dw.p, sh.n, sh.k, sh.m, dout.p, nullptr);
    ASSERT_EQ(err, "");
    CUDA_OK(cudaDeviceSynchronize());
    // Sums of k products of N(0,1) values: |out| ~ sqrt(k); fp32 accumulation adds ~1e-6 relative.
    expect_close(dout.download(), want, rel_bound<TypeParam>(), 1e-3f * std::sqrt(static_cast<float>(sh.k)),
                 "gemm " + std::to_string(sh.n) + "x" + std::to_string(sh.k) + "x" + std::to_string(sh.m) +
                     (sh.tune ? " tuned" : ""));
  }
}

TEST(CudaOps, GreedySampleAndLogSoftmaxMatchCpu) {
  REQUIRE_DEVICE();
  std::mt19937 rng(30);
  for (int64_t vocab : {1000, 49152, 128256}) {
    const int64_t n = 6;
    std::vector<float> logits(n * vocab);
    std::normal_distribution<float> d(0.0f, 4.0f);
    for (auto& x : logits) x = d(rng);
    // Row 1: a tie for the maximum (the lower id wins); row 2: the maximum at the last id.
    const float top = 100.0f;
    logits[1 * vocab + vocab - 3] = top;
    logits[1 * vocab + 7] = top;
    logits[2 * vocab + vocab - 1] = top;
    DeviceBuffer<float> dl(logits), dlp(logits.size());
    DeviceBuffer<int32_t> dnext(n);
    cuda::greedy_sample(dl.p, n, vocab, dnext.p, dlp.p, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    const std::vector<int32_t> next = dnext.download();
    const std::vector<float> lp = dlp.download();
    std::vector<float> want(vocab);
    for (int64_t r = 0; r < n; ++r) {
      EXPECT_EQ(next[r], argmax(logits.data() + r * vocab, vocab)) << "row " << r << " vocab " << vocab;
      log_softmax(logits.data() + r * vocab, vocab, want.data());
      double worst = 0;
      for (int64_t i = 0; i < vocab; ++i) worst = std::max(worst, double(std::fabs(lp[r * vocab + i] - want[i])));
      EXPECT_LT(worst, 1e-4) << "log_softmax row " << r << " vocab " << vocab;
    }
    EXPECT_EQ(next[1], 7);
    EXPECT_EQ(next[2], vocab - 1);
  }
}

}  // namespace
}  // namespace tessera
