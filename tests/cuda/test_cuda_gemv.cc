// The fused decode GEMVs (backend/cuda/gemv.h) against CPU references that follow the
// unfused ops, for both element types T (bf16: suite CudaGemv, f16: CudaGemvF16): gather,
// cpu::rms_norm rounded to T, fp32 dot products of the T values (cpu::matmul), then the
// epilogue with its roundings (T out, fp32 out, residual add, cpu::silu_and_mul of the
// T-rounded gate and up). Shapes of Llama-3.1-8B and SmolLM2 and odd ones, n = 1, 3, 8, 16.
// Each element is held to the T output rounding plus a bound on the summation noise: with
// a norm, the kernels round x * norm_w to T and apply inv_rms to the sum, where the
// reference rounds x * inv_rms * norm_w, one rounding per term either way, so the two differ
// by ~u * |W_r . xn| (elementwise product; u = 2^-9 for bf16, 2^-12 for f16), bounded here
// by 8u * |W_r|_2 * max|xn| (2^-14 without a norm: accumulation order, fp32 for both).
// Skips when no CUDA device is usable (CI compiles it).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/ops.h"
#include "backend/cuda/gemv.h"
#include "cuda/cuda_test_util.h"

namespace tessera {
namespace {

using cuda::bf16;
using cuda::f16;
using cuda_test::DeviceBuffer;

enum class Kind { kElem, kF32, kAdd, kSiluMul };  // T out, fp32 out, residual add, silu * up

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kElem:
      return "gemv";
    case Kind::kF32:
      return "gemv_f32";
    case Kind::kAdd:
      return "gemv_add";
    case Kind::kSiluMul:
      return "gemv_silu_mul";
  }
  return "?";
}

float bf16_value(bf16 v) { return __bfloat162float(v); }

bf16 to_bf16(float f) {  // round to nearest even (finite values)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  __nv_bfloat16_raw raw;
  raw.x = static_cast<uint16_t>(u >> 16);
  return bf16(raw);
}

// The host side of an element type: exact value, round to nearest even from fp32, the
// relative bound of one output rounding (bf16: cuda_test::kRel; f16 the same 4x margin over
// its 2^-12) and of the noise of one rounding per term (see the top).
template <typename T>
struct Elem;

template <>
struct Elem<bf16> {
  static constexpr DType kDType = DType::kBF16;
  static constexpr float kRel = cuda_test::kRel;
  static constexpr float kNormNoise = 1.0f / 64;
  static float value(bf16 v) { return bf16_value(v); }
  static bf16 from(float f) { return to_bf16(f); }
};

template <>
struct Elem<f16> {
  static constexpr DType kDType = DType::kF16;
  static constexpr float kRel = 1.0f / 1024;  // 11 significant bits: rounding <= 2^-12 relative
  static constexpr float kNormNoise = 1.0f / 512;
  static float value(f16 v) { return __half2float(v); }
  static f16 from(float f) { return __float2half_rn(f); }  // subnormals and overflow included
};

template <typename T>
float value(T v) {
  return Elem<T>::value(v);
}

template <typename T>
float round_to(float f) {
  return Elem<T>::value(Elem<T>::from(f));
}

// offset + uniform [-scale, scale) values rounded to T (xorshift: fast enough for the
// 1 GB LM head).
template <typename T>
std::vector<T> random_elems(size_t n, uint64_t seed, float scale, float offset = 0.0f) {
  std::vector<T> v(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  for (size_t i = 0; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const float u = static_cast<float>(s >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
    v[i] = Elem<T>::from(offset + scale * u);
  }
  return v;
}

struct Shape {
  const char* name;
  Kind kind;
  bool norm;
  bool gather;   // input rows through an index array
  int64_t k, m;  // m: output columns (kSiluMul: inter; the weights have 2 * inter rows)
};

// One shape's weights, on both sides.
template <typename T>
struct Weights {
  int64_t rows, k;
  std::vector<T> w, norm;
  std::vector<float> norm_f;    // RMSNorm weights
  std::vector<float> row_norm;  // |W_r|_2
  DeviceBuffer<T> dw, dnorm;

  Weights(const Shape& s, uint64_t seed)
      : rows(s.kind == Kind::kSiluMul ? 2 * s.m : s.m),
        k(s.k),
        w(random_elems<T>(static_cast<size_t>(rows * k), seed, std::sqrt(3.0f / static_cast<float>(k)))),
        norm(random_elems<T>(static_cast<size_t>(k), seed + 1, 0.25f, 1.0f)),
        row_norm(rows),
        dw(w),
        dnorm(norm) {
    for (T v : norm) norm_f.push_back(value(v));
#pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
      double s2 = 0;
      for (int64_t i = 0; i < k; ++i) s2 += static_cast<double>(value(w[r * k + i])) * value(w[r * k + i]);
      row_norm[r] = static_cast<float>(std::sqrt(s2));
    }
  }
};

// Runs shape s at n tokens on the device and checks every output element.
template <typename T>
void check_case(const Shape& s, const Weights<T>& wt, int64_t n, const cuda::GemvOptions& opt, uint64_t seed) {
  const int64_t k = s.k, m = s.m;
  const float eps = 1e-5f;
  const int64_t x_rows = s.gather ? n + 7 : n;
  const std::vector<T> x = random_elems<T>(static_cast<size_t>(x_rows * k), seed, 1.0f);
  std::vector<int32_t> idx(n);
  for (int64_t t = 0; t < n; ++t) idx[t] = static_cast<int32_t>((t * 5 + 3) % x_rows);
  const std::vector<T> residual = random_elems<T>(static_cast<size_t>(n * m), seed + 7, 2.0f);

  DeviceBuffer<T> dx(x);
  DeviceBuffer<int32_t> didx(idx);
  DeviceBuffer<T> dout(s.kind == Kind::kAdd ? residual : std::vector<T>(n * m, Elem<T>::from(12345.0f)));
  DeviceBuffer<float> dout_f(static_cast<size_t>(n * m));
  const cuda::GemvInput<T> in{dx.p, s.gather ? didx.p : nullptr, s.norm ? wt.dnorm.p : nullptr, eps};
  std::string err;
  switch (s.kind) {
    case Kind::kElem:
      err = cuda::gemv(in, wt.dw.p, n, k, m, dout.p, nullptr, opt);
      break;
    case Kind::kF32:
      err = cuda::gemv_f32(in, wt.dw.p, n, k, m, dout_f.p, nullptr, opt);
      break;
    case Kind::kAdd:
      err = cuda::gemv_add(in, wt.dw.p, n, k, m, dout.p, nullptr, opt);
      break;
    case Kind::kSiluMul:
      err = cuda::gemv_silu_mul(in, wt.dw.p, n, k, m, dout.p, nullptr, opt);
      break;
  }
  ASSERT_EQ(err, "");
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> got(n * m);
  if (s.kind == Kind::kF32) {
    got = dout_f.download();
  } else {
    const std::vector<T> h = dout.download();
    for (size_t i = 0; i < h.size(); ++i) got[i] = value(h[i]);
  }

  // Reference: the gathered rows, normed and rounded as the unfused norm's output.
  std::vector<float> xs(n * k);
  for (int64_t t = 0; t < n; ++t) {
    const int64_t src = s.gather ? idx[t] : t;
    for (int64_t i = 0; i < k; ++i) xs[t * k + i] = value(x[src * k + i]);
  }
  if (s.norm) {
    cpu::rms_norm(xs.data(), wt.norm_f.data(), eps, n, k, xs.data());
    for (float& v : xs) v = round_to<T>(v);
  }
  std::vector<float> x_max(n, 0.0f);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < k; ++i) x_max[t] = std::max(x_max[t], std::fabs(xs[t * k + i]));
  }
  TensorView view;
  view.dtype = Elem<T>::kDType;
  view.shape = {wt.rows, k};
  view.data = reinterpret_cast<const std::byte*>(wt.w.data());
  view.nbytes = wt.w.size() * sizeof(T);
  std::vector<float> y(n * wt.rows);
  cpu::matmul(xs.data(), n, view, y.data());
  std::vector<float> act;  // silu(T(g)) * T(u)
  if (s.kind == Kind::kSiluMul) {
    std::vector<float> gate(n * m), up(n * m);
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t j = 0; j < m; ++j) {
        gate[t * m + j] = round_to<T>(y[t * wt.rows + j]);
        up[t * m + j] = round_to<T>(y[t * wt.rows + m + j]);
      }
    }
    act.resize(n * m);
    cpu::silu_and_mul(gate.data(), up.data(), n, m, act.data());
  }

  const float kRel = Elem<T>::kRel;
  const float noise_scale = s.norm ? Elem<T>::kNormNoise : 1.0f / 16384;
  int64_t bad = 0, worst = -1;
  double worst_excess = -INFINITY;
  float worst_want = 0;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t j = 0; j < m; ++j) {
      const int64_t at = t * m + j;
      const float noise = noise_scale * wt.row_norm[j] * x_max[t];
      const float dot = y[t * wt.rows + j];
      float want = 0, bound = 0;
      switch (s.kind) {
        case Kind::kElem:
          want = dot;
          bound = kRel * std::fabs(want) + noise;
          break;
        case Kind::kF32:
          want = dot;
          bound = std::fabs(want) / 4096 + noise;
          break;
        case Kind::kAdd:
          want = round_to<T>(value(residual[at]) + round_to<T>(dot));
          bound = kRel * (std::fabs(want) + std::fabs(dot)) + noise;
          break;
        case Kind::kSiluMul: {
          const float g = round_to<T>(dot), u = round_to<T>(y[t * wt.rows + m + j]);
          const float noise_u = noise_scale * wt.row_norm[m + j] * x_max[t];
          want = act[at];
          bound = kRel * std::fabs(want) + std::fabs(g / (1.0f + std::exp(-g))) * (kRel * std::fabs(u) + noise_u) +
                  1.1f * std::fabs(u) * (kRel * std::fabs(g) + noise);
          break;
        }
      }
      const double diff = std::fabs(static_cast<double>(got[at]) - want);
      const double excess = std::isnan(diff) ? INFINITY : diff - bound;
      if (!(diff <= bound)) ++bad;
      if (excess > worst_excess) worst_excess = excess, worst = at, worst_want = want;
    }
  }
  EXPECT_EQ(bad, 0) << s.name << " (" << kind_name(s.kind) << ", " << (Elem<T>::kDType == DType::kF16 ? "f16" : "bf16")
                    << ") n " << n << " variant " << opt.variant << " pdl "
                    << opt.pdl << ": worst at token " << worst / m << " column " << worst % m << " gpu " << got[worst]
                    << " cpu " << worst_want;
}

// A decode layer's chain (qkv, o-proj add, gate/up silu, down add) captured into a CUDA
// graph with programmatic dependent launch equals the same launches made eagerly, bit for
// bit (the kernels sum in a fixed order). Registered first in each suite, so that (in a
// whole run) the capture makes these kernels' first launches, which opt in to their shared
// memory.
template <typename T>
void graph_capture_equals_eager() {
  const int64_t n = 5, d = 576, qkv = 960, inter = 1536;
  const std::vector<T> wqkv = random_elems<T>(qkv * d, 1, 0.07f), wo = random_elems<T>(d * d, 2, 0.07f),
                       wgu = random_elems<T>(2 * inter * d, 3, 0.07f), wdown = random_elems<T>(d * inter, 4, 0.04f),
                       norm = random_elems<T>(d, 5, 0.2f, 1.0f), hidden0 = random_elems<T>(n * d, 6, 1.0f),
                       attn = random_elems<T>(n * d, 7, 1.0f);
  DeviceBuffer<T> dwqkv(wqkv), dwo(wo), dwgu(wgu), dwdown(wdown), dnorm(norm), dattn(attn);
  auto run_chain = [&](T* hidden, T* q, T* act, cudaStream_t stream) {
    const cuda::GemvOptions pdl{true, 0};
    EXPECT_EQ(cuda::gemv({hidden, nullptr, dnorm.p, 1e-5f}, dwqkv.p, n, d, qkv, q, stream, pdl), "");
    EXPECT_EQ(cuda::gemv_add({dattn.p}, dwo.p, n, d, d, hidden, stream, pdl), "");
    EXPECT_EQ(cuda::gemv_silu_mul({hidden, nullptr, dnorm.p, 1e-5f}, dwgu.p, n, d, inter, act, stream, pdl), "");
    EXPECT_EQ(cuda::gemv_add({act}, dwdown.p, n, inter, d, hidden, stream, pdl), "");
  };
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceBuffer<T> gh(hidden0), gq(n * qkv), gact(n * inter);
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  run_chain(gh.p, gq.p, gact.p, stream);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));

  DeviceBuffer<T> eh(hidden0), eq(n * qkv), eact(n * inter);
  run_chain(eh.p, eq.p, eact.p, stream);
  CUDA_OK(cudaStreamSynchronize(stream));
  auto same = [](const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
  };
  EXPECT_TRUE(same(gq.download(), eq.download()));
  EXPECT_TRUE(same(gact.download(), eact.download()));
  EXPECT_TRUE(same(gh.download(), eh.download()));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// Llama-3.1-8B decode shapes: hidden 4096, q/k/v 6144 = (32 + 2 x 8) x 128, FFN 14336, vocab
// 128256.
const Shape kLlama8B[] = {
    {"8B qkv", Kind::kElem, true, false, 4096, 6144},         {"8B o", Kind::kAdd, false, false, 4096, 4096},
    {"8B gate_up", Kind::kSiluMul, true, false, 4096, 14336}, {"8B down", Kind::kAdd, false, false, 14336, 4096},
    {"8B lm_head", Kind::kF32, true, true, 4096, 128256},
};

// SmolLM2-135M: hidden 576, q/k/v 960 = (9 + 2 x 3) x 64, FFN 1536, vocab 49152; and odd
// widths (m not a multiple of 16 or 8, k not of 64).
const Shape kSmall[] = {
    {"smol qkv", Kind::kElem, true, false, 576, 960},
    {"smol o", Kind::kAdd, false, false, 576, 576},
    {"smol gate_up", Kind::kSiluMul, true, false, 576, 1536},
    {"smol down", Kind::kAdd, false, false, 1536, 576},
    {"smol lm_head", Kind::kF32, true, true, 576, 49152},
    {"odd plain", Kind::kElem, false, false, 4096, 1000},
    {"odd plain gathered", Kind::kElem, false, true, 200, 1001},
    {"odd f32", Kind::kF32, false, false, 1000, 1000},
    {"odd add normed", Kind::kAdd, true, true, 520, 1000},
    {"odd silu", Kind::kSiluMul, false, false, 576, 1000},
    {"odd silu normed", Kind::kSiluMul, true, false, 8, 37},
    {"tiny", Kind::kElem, false, false, 8, 1},
    // k a multiple of 64 (the bulk kernels' tensor maps) with a last tile cut short: gate
    // rows past m read up rows, rows past the end arrive as zeros.
    {"bulk silu m % 8", Kind::kSiluMul, true, false, 1024, 1001},
    {"bulk add m % 16", Kind::kAdd, false, true, 640, 999},
    {"bulk f32 k % 512", Kind::kF32, true, false, 704, 77},
};

constexpr int64_t kTokenCounts[] = {1, 3, 8, 16};

template <typename T>
void matches_cpu_on_small_shapes() {
  uint64_t seed = 100;
  for (const Shape& s : kSmall) {
    const Weights<T> wt(s, seed++);
    for (int64_t n : kTokenCounts) check_case(s, wt, n, {}, seed++);
  }
}

template <typename T>
void matches_cpu_on_llama8b_shapes() {
  uint64_t seed = 200;
  for (const Shape& s : kLlama8B) {
    const Weights<T> wt(s, seed++);
    for (int64_t n : kTokenCounts) check_case(s, wt, n, {}, seed++);
    // The bulk-copy kernels: a CTA per SM over many tiles, k of 8 chunks and more.
    for (int v = 0; v < cuda::gemv_variant_count(); ++v) {
      if (!cuda::gemv_variant(v).bulk) continue;
      for (int64_t n : {1, 16}) check_case(s, wt, n, {true, v}, seed++);
    }
  }
}

// Every kernel shape of the engine, and launches with programmatic dependent launch.
template <typename T>
void every_variant_and_pdl() {
  uint64_t seed = 300;
  for (const Shape& s : kSmall) {
    const Weights<T> wt(s, seed++);
    for (int v = 0; v < cuda::gemv_variant_count(); ++v) {
      for (int64_t n : {2, 11}) check_case(s, wt, n, {v % 2 == 1, v}, seed++);
    }
  }
}

// Refusals come back as messages without touching the device (so this runs anywhere).
template <typename T>
void rejects_what_it_cannot_run() {
  alignas(16) static T buf[64];
  const cuda::GemvInput<T> in{buf};
  EXPECT_NE(cuda::gemv(in, buf, 17, 8, 4, buf, nullptr), "");        // too many tokens
  EXPECT_NE(cuda::gemv(in, buf, 1, 12, 4, buf, nullptr), "");        // k % 8 != 0
  EXPECT_NE(cuda::gemv({buf + 1}, buf, 1, 8, 4, buf, nullptr), "");  // x misaligned
  EXPECT_NE(cuda::gemv(in, buf + 4, 1, 8, 4, buf, nullptr), "");     // w misaligned
  EXPECT_NE(cuda::gemv(in, buf, 1, 8, 4, buf, nullptr, {false, 99}), "");
  EXPECT_EQ(cuda::gemv(in, buf, 0, 8, 4, buf, nullptr), "");  // nothing to do
  EXPECT_EQ(cuda::gemv_add(in, buf, 3, 8, 0, buf, nullptr), "");
  EXPECT_TRUE(cuda::gemv_supported(16, 4096));
  EXPECT_FALSE(cuda::gemv_supported(0, 4096));
}

// bf16 (suite CudaGemv) and f16 (CudaGemvF16), each suite's graph capture first.
TEST(CudaGemv, GraphCaptureWithPdlEqualsEager) {
  REQUIRE_DEVICE();
  graph_capture_equals_eager<bf16>();
}
TEST(CudaGemv, MatchesCpuOnSmallShapes) {
  REQUIRE_DEVICE();
  matches_cpu_on_small_shapes<bf16>();
}
TEST(CudaGemv, MatchesCpuOnLlama8BShapes) {
  REQUIRE_DEVICE();
  matches_cpu_on_llama8b_shapes<bf16>();
}
TEST(CudaGemv, EveryVariantAndPdl) {
  REQUIRE_DEVICE();
  every_variant_and_pdl<bf16>();
}
TEST(CudaGemv, RejectsWhatItCannotRun) { rejects_what_it_cannot_run<bf16>(); }

TEST(CudaGemvF16, GraphCaptureWithPdlEqualsEager) {
  REQUIRE_DEVICE();
  graph_capture_equals_eager<f16>();
}
TEST(CudaGemvF16, MatchesCpuOnSmallShapes) {
  REQUIRE_DEVICE();
  matches_cpu_on_small_shapes<f16>();
}
TEST(CudaGemvF16, MatchesCpuOnLlama8BShapes) {
  REQUIRE_DEVICE();
  matches_cpu_on_llama8b_shapes<f16>();
}
TEST(CudaGemvF16, EveryVariantAndPdl) {
  REQUIRE_DEVICE();
  every_variant_and_pdl<f16>();
}
TEST(CudaGemvF16, RejectsWhatItCannotRun) { rejects_what_it_cannot_run<f16>(); }

}  // namespace
}  // namespace tessera
