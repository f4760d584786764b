// matmul throughput on SmolLM2-135M shapes. Prints a table; medians over repeated runs.
//
//   bench_matmul [--quick] [--threads 1,2] [--types Q4_1,Q8_0,F32,F16] [--m 1,512] [--no-model]
//
// m = 1 (decode) runs cycle through enough copies of the weight to exceed the last-level
// cache, as a real decode step does (the model is ~96 MB); m = 512 (prefill) reuses one copy.
// GFLOP/s counts 2 m n k; GB/s counts weight bytes read once per call.
// The "model" rows time all matmuls of one SmolLM2-135M Q4_1 forward pass (30 layers of
// q, k, v, o, gate, up, down in Q4_1 plus the Q8_0 tied lm_head; prefill without lm_head),
// each weight a distinct buffer, so the decode row is a bound on tokens/s; the "fused" rows
// issue q/k/v and gate/up through matmul_multi (4 parallel regions per layer instead of 7).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/dequantize.h"
#include "backend/cpu/matmul.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

using tessera::DType;
using tessera::TensorView;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Buffer {
  std::vector<std::byte> bytes;
  TensorView view;
};

// Weight [n, k] of dtype t, quantized from random values (one random row repeated with
// a per-row shift, to keep set-up fast).
Buffer make_weight(DType t, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  Buffer b;
  const int64_t rb = tessera::row_bytes(t, k);
  b.bytes.resize(static_cast<size_t>(n * rb));
  std::vector<float> row(static_cast<size_t>(k));
  for (auto& v : row) v = dist(rng);
  std::vector<std::byte> q(static_cast<size_t>(rb));
  tessera::cpu::quantize_row(t, row.data(), q.data(), k);
  for (int64_t j = 0; j < n; ++j) std::memcpy(b.bytes.data() + j * rb, q.data(), static_cast<size_t>(rb));
  b.view.dtype = t;
  b.view.shape = {n, k};
  b.view.data = b.bytes.data();
  b.view.nbytes = b.bytes.size();
  return b;
}

template <class F>
double median_time(F&& f, double budget_s, int min_reps, int max_reps) {
  f();  // warm-up (scratch, thread team)
  std::vector<double> ts;
  const double start = now_s();
  while (static_cast<int>(ts.size()) < min_reps || (now_s() - start < budget_s && static_cast<int>(ts.size()) < max_reps)) {
    const double t0 = now_s();
    f();
    ts.push_back(now_s() - t0);
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

struct Shape {
  int64_t n, k;
};

}  // namespace

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  for (size_t p = 0; p < s.size();) {
    const size_t q = s.find(',', p);
    out.push_back(s.substr(p, q == std::string::npos ? std::string::npos : q - p));
    p = q == std::string::npos ? s.size() : q + 1;
  }
  return out;
}

int main(int argc, char** argv) {
  bool quick = false, model_rows = true;
  std::vector<int> threads = {1, 2};
  std::vector<int64_t> ms = {1, 512};
  std::vector<DType> types = {DType::kQ4_1, DType::kQ8_0, DType::kF32, DType::kF16};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--quick") quick = true;
    if (arg == "--no-model") model_rows = false;
    if (arg == "--threads" && has_value) {
      threads.clear();
      for (const auto& v : split(argv[++i])) threads.push_back(std::stoi(v));
    }
    if (arg == "--m" && has_value) {
      ms.clear();
      for (const auto& v : split(argv[++i])) ms.push_back(std::stoll(v));
    }
    if (arg == "--types" && has_value) {
      types.clear();
      for (const auto& v : split(argv[++i]))
        for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                        DType::kQ8_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K})
          if (tessera::dtype_name(t) == v) types.push_back(t);
    }
  }
  const double budget = quick ? 0.15 : 0.6;
  const Shape shapes[] = {{576, 576}, {192, 576}, {1536, 576}, {576, 1536}, {49152, 576}};

  std::printf("%-5s %-12s %4s %3s %10s %9s %8s\n", "dtype", "[n,k]", "m", "thr", "time_us", "GFLOP/s", "GB/s");
  std::vector<float> x(static_cast<size_t>(512 * 1536));
  std::mt19937 rng(1);
  std::normal_distribution<float> xd(0.0f, 1.0f);
  for (auto& v : x) v = xd(rng);
  std::vector<float> y(static_cast<size_t>(512) * 49152);

  for (DType t : types) {
    for (const Shape& s : shapes) {
      const int64_t wbytes = tessera::row_bytes(t, s.k) * s.n;
      // Enough distinct copies for m = 1 to stream from DRAM (>= 96 MB touched per cycle).
      const bool decode = std::find(ms.begin(), ms.end(), 1) != ms.end();
      const int copies =
          decode ? static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(4096, (96LL << 20) / wbytes + 1))) : 1;
      std::vector<Buffer> ws;
      for (int c = 0; c < copies; ++c) ws.push_back(make_weight(t, s.n, s.k, 7 + c));
      for (int64_t m : ms) {
        for (int th : threads) {
          omp_set_num_threads(th);
          int next = 0;
          const double flops = 2.0 * m * s.n * s.k;
          if (quick && m == 512 && s.n == 49152) continue;
          const int max_reps = m == 1 ? 2000 : 50;
          const double tm = median_time(
              [&] {
                const TensorView& w = ws[m == 1 ? next++ % copies : 0].view;
                tessera::cpu::matmul(x.data(), m, w, y.data());
              },
              budget, m == 512 && s.n == 49152 ? 2 : 5, max_reps);
          std::printf("%-5s [%5lld,%4lld] %4lld %3d %10.1f %9.1f %8.2f\n", std::string(tessera::dtype_name(t)).c_str(),
                      static_cast<long long>(s.n), static_cast<long long>(s.k), static_cast<long long>(m), th,
                      tm * 1e6, flops / tm * 1e-9, wbytes / tm * 1e-9);
          std::fflush(stdout);
        }
      }
    }
  }

  if (!model_rows) return 0;
  // Whole-model matmul time for SmolLM2-135M Q4_1 (tied Q8_0 embedding as lm_head).
  const Shape layer[] = {{576, 576}, {192, 576}, {192, 576}, {576, 576}, {1536, 576}, {1536, 576}, {576, 1536}};
  std::vector<Buffer> model;
  for (int l = 0; l < 30; ++l)
    for (const Shape& s : layer) model.push_back(make_weight(DType::kQ4_1, s.n, s.k, 100 + l));
  const Buffer head = make_weight(DType::kQ8_0, 49152, 576, 99);
  for (bool fused : {false, true}) {
    for (int64_t m : ms) {
      for (int th : threads) {
        omp_set_num_threads(th);
        double flops = 0;
        for (const Buffer& b : model) flops += 2.0 * m * b.view.shape[0] * b.view.shape[1];
        if (m == 1) flops += 2.0 * 49152 * 576;
        float* out = y.data();
        const double tm = median_time(
            [&] {
              for (size_t l = 0; l < model.size(); l += 7) {
                const Buffer* L = &model[l];  // q, k, v, o, gate, up, down
                if (fused) {
                  const tessera::cpu::MatmulOutput qkv[] = {{&L[0].view, out}, {&L[1].view, out}, {&L[2].view, out}};
                  tessera::cpu::matmul_multi(x.data(), m, qkv);
                  tessera::cpu::matmul(x.data(), m, L[3].view, out);
                  const tessera::cpu::MatmulOutput gu[] = {{&L[4].view, out}, {&L[5].view, out}};
                  tessera::cpu::matmul_multi(x.data(), m, gu);
                  tessera::cpu::matmul(x.data(), m, L[6].view, out);
                } else {
                  for (int t = 0; t < 7; ++t) tessera::cpu::matmul(x.data(), m, L[t].view, out);
                }
              }
              if (m == 1) tessera::cpu::matmul(x.data(), 1, head.view, out);
            },
            quick ? 0.5 : 2.0, 3, m == 1 ? 200 : 10);
        std::printf("model%s m=%-4lld thr=%d: %8.2f ms per %s  (%.1f GFLOP/s, %.1f %s/s from matmuls alone)\n",
                    fused ? " (qkv, gate/up fused)" : "", static_cast<long long>(m), th, tm * 1e3,
                    m == 1 ? "token" : "512-token prompt", flops / tm * 1e-9, (m == 1 ? 1.0 : 512.0) / tm,
                    m == 1 ? "tok" : "prompt tok");
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
