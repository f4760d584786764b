// matmul dispatcher: picks the kernel for the weight format, quantizes x for the integer
// kernels, and splits the output over OpenMP threads.
//
// Work split: each thread owns a contiguous range of weight rows (or of x rows when n is
// small), walked in chunks of kChunkN weight rows; a kernel call sweeps a block of x rows
// (sized to stay in L2) over one chunk, so the chunk is reused from L1/L2 (prefill), and
// weights stream once, in order (decode).
#include "backend/cpu/matmul.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <vector>

#include "backend/cpu/matmul_internal.h"
#include "common/check.h"

namespace tessera::cpu {
namespace {

using detail::GemmArgs;
using detail::TileFn;

TileFn tile_fn(DType t) {
  switch (t) {
    case DType::kF32: return detail::gemm_f32;
    case DType::kF16: return detail::gemm_f16;
    case DType::kBF16: return detail::gemm_bf16;
    case DType::kQ4_0: return detail::gemm_q4_0;
    case DType::kQ4_1: return detail::gemm_q4_1;
    case DType::kQ5_0: return detail::gemm_q5_0;
    case DType::kQ5_1: return detail::gemm_q5_1;
    case DType::kQ8_0: return detail::gemm_q8_0;
    case DType::kQ4_K: return detail::gemm_q4_k;
    case DType::kQ5_K: return detail::gemm_q5_k;
    case DType::kQ6_K: return detail::gemm_q6_k;
    case DType::kI32: break;
  }
  return nullptr;
}

// Per calling thread: storage for the quantized activations, grown on demand, never shrunk.
struct ActScratch {
  std::unique_ptr<std::byte[]> buf;
  size_t cap = 0;

  std::byte* get(size_t bytes) {
    if (bytes > cap) {
      cap = std::max(bytes, cap * 3 / 2);
      buf.reset(new std::byte[cap + 64]);
    }
    auto p = reinterpret_cast<uintptr_t>(buf.get());
    return reinterpret_cast<std::byte*>((p + 63) & ~uintptr_t{63});
  }
};

WideActs layout_wide_acts(int64_t m, int64_t k) {
  thread_local ActScratch scratch;
  WideActs q;
  q.m = m;
  q.k = k;
  q.nb = k / kQK;
  q.nb_pad = (q.nb + 7) / 8 * 8;
  auto round64 = [](size_t b) { return (b + 63) & ~size_t{63}; };
  const size_t qs_bytes = round64(static_cast<size_t>(m * k) * sizeof(int16_t));
  const size_t f_bytes = round64(static_cast<size_t>(m * q.nb_pad) * sizeof(float));
  const size_t ds_bytes = round64(static_cast<size_t>(m * q.nb * 2) * sizeof(float));
  std::byte* base = scratch.get(qs_bytes + 2 * f_bytes + ds_bytes);
  q.qs = reinterpret_cast<int16_t*>(base);
  q.d = reinterpret_cast<float*>(base + qs_bytes);
  q.s = reinterpret_cast<float*>(base + qs_bytes + f_bytes);
  q.ds = reinterpret_cast<float*>(base + qs_bytes + 2 * f_bytes);
  return q;
}

QuantizedActs layout_acts(int64_t m, int64_t k) {
  thread_local ActScratch scratch;
  QuantizedActs q;
  q.m = m;
  q.k = k;
  q.nb = k / kQK;
  q.nb_pad = (q.nb + 7) / 8 * 8;
  q.qs_stride = k;  // k % 32 == 0: every row's qs stays 32-byte aligned
  auto round64 = [](size_t b) { return (b + 63) & ~size_t{63}; };
  const size_t qs_bytes = round64(static_cast<size_t>(m * k));
  const size_t f_bytes = round64(static_cast<size_t>(m * q.nb_pad) * sizeof(float));
  const size_t s16_bytes = round64(static_cast<size_t>(m * q.nb * 2) * sizeof(int16_t));
  const size_t ds_bytes = round64(static_cast<size_t>(m * q.nb * 2) * sizeof(float));
  std::byte* base = scratch.get(qs_bytes + 2 * f_bytes + s16_bytes + ds_bytes);
  q.qs = reinterpret_cast<int8_t*>(base);
  q.d = reinterpret_cast<float*>(base + qs_bytes);
  q.s = reinterpret_cast<float*>(base + qs_bytes + f_bytes);
  q.sum16 = reinterpret_cast<int16_t*>(base + qs_bytes + 2 * f_bytes);
  q.ds = reinterpret_cast<float*>(base + qs_bytes + 2 * f_bytes + s16_bytes);
  return q;
}

constexpr int64_t kChunkN = 64;  // weight rows per kernel call (cache block of w)

struct Job {
  GemmArgs args;
  TileFn fn;
  DType dtype;
  bool quantized;   // reads quantized activations
  int64_t n_begin;  // offset of this weight's rows in the concatenated output range
};

// Thread tid's share of the output: a contiguous range of the concatenated weight rows
// (aligned to 8) and, when there are too few rows to go round, a range of x rows instead.
void run_share(const Job* jobs, int count, int64_t total_n, int64_t m, int tid, int nth) {
  int64_t i0 = 0, i1 = m, g0 = 0, g1 = total_n;
  if (nth > 1) {
    if (total_n >= 16 * nth || m < 4 * nth) {
      g0 = std::min(total_n, (total_n * tid / nth + 7) / 8 * 8);
      g1 = tid + 1 == nth ? total_n : std::min(total_n, (total_n * (tid + 1) / nth + 7) / 8 * 8);
    } else {
      i0 = std::min(m, (m * tid / nth + 3) / 4 * 4);
      i1 = tid + 1 == nth ? m : std::min(m, (m * (tid + 1) / nth + 3) / 4 * 4);
    }
  }
  if (i0 >= i1) return;
  // x rows in blocks of ~192 KB of (quantized) activations, so a block stays in L2 while every
  // weight chunk passes over it; each weight chunk is then read once per block.
  const int64_t k = jobs[0].args.k;
  const int64_t m_block = std::max<int64_t>(16, (192 * 1024 / k) / 16 * 16);
  for (int64_t ib = i0; ib < i1; ib += m_block) {
    const int64_t ie = std::min(i1, ib + m_block);
    for (int t = 0; t < count; ++t) {
      const Job& job = jobs[t];
      const int64_t j0 = std::max<int64_t>(0, g0 - job.n_begin);
      const int64_t j1 = std::min(job.args.n, g1 - job.n_begin);
      for (int64_t j = j0; j < j1; j += kChunkN) job.fn(job.args, ib, ie, j, std::min(j1, j + kChunkN));
    }
  }
}

void run_jobs(const float* x, int64_t m, int64_t k, Job* jobs, int count, bool wide);

// x = Q(x) + r, where r is what 8-bit quantization of x left out; r is quantized in turn
// and both run as 2m x rows (each weight chunk is unpacked once for both), then summed:
//   y = W Q(x) + W Q(r),  |x - Q(x) - Q(r)| <= max|r| / 254 per block (~15-bit activations).
// Returns false when some weight is not quantized.
bool run_with_residual(const float* x, int64_t m, int64_t k, Job* jobs, int count) {
  int64_t total_n = 0;
  for (int t = 0; t < count; ++t) {
    if (!jobs[t].quantized) return false;
    total_n += jobs[t].args.n;
  }
  thread_local std::vector<float> x2, y2;
  x2.resize(static_cast<size_t>(2 * m * k));
  y2.resize(static_cast<size_t>(2 * m * total_n));
  QuantizedActs q0 = layout_acts(m, k);
  detail::quantize_acts_rows(x, k, 0, m, &q0);
  for (int64_t i = 0; i < m; ++i) {
    const float* xr = x + i * k;
    const int8_t* qs = q0.row_qs(i);
    const float* d = q0.row_d(i);
    float* hi = x2.data() + i * k;
    float* lo = x2.data() + (m + i) * k;
    for (int64_t e = 0; e < k; ++e) {
      hi[e] = xr[e];
      lo[e] = xr[e] - d[e / kQK] * static_cast<float>(qs[e]);
    }
  }
  Job two[8];
  int64_t offset = 0;
  for (int t = 0; t < count; ++t) {
    two[t] = jobs[t];
    two[t].args.x = x2.data();
    two[t].args.m = 2 * m;
    two[t].args.y = y2.data() + 2 * m * offset;
    offset += jobs[t].args.n;
  }
  run_jobs(x2.data(), 2 * m, k, two, count, /*wide=*/false);
  offset = 0;
  for (int t = 0; t < count; ++t) {
    const int64_t n = jobs[t].args.n;
    const float* yt = y2.data() + 2 * m * offset;
    float* y = jobs[t].args.y;
    for (int64_t i = 0; i < m * n; ++i) y[i] = yt[i] + yt[m * n + i];
    offset += n;
  }
  return true;
}

std::atomic<ActivationPrecision> g_precision{ActivationPrecision::kPrecise};

// Shared by matmul and matmul_multi: every weight has k columns; x is quantized at most
// once per width. wide: 16-bit activations for the formats that have such a kernel.
void run_jobs(const float* x, int64_t m, int64_t k, Job* jobs, int count, bool wide) {
  bool narrow_x = false, wide_x = false;
  int64_t total_n = 0;
  for (int t = 0; t < count; ++t) {
    jobs[t].n_begin = total_n;
    total_n += jobs[t].args.n;
    if (!jobs[t].quantized) continue;
    const bool w = wide && detail::has_wide_kernel(jobs[t].dtype);
    wide_x |= w;
    narrow_x |= !w;
  }
  if (m <= 0 || total_n <= 0) return;
  QuantizedActs xq;
  WideActs xw;
  if (narrow_x) xq = layout_acts(m, k);
  if (wide_x) xw = layout_wide_acts(m, k);
  for (int t = 0; t < count; ++t) {
    GemmArgs& a = jobs[t].args;
    a.xq = nullptr;
    a.xw = nullptr;
    if (!jobs[t].quantized) continue;
    if (wide && detail::has_wide_kernel(jobs[t].dtype)) {
      a.xw = &xw;
    } else {
      a.xq = &xq;
    }
  }
  const bool quantized = narrow_x || wide_x;
  auto quantize = [&](int64_t i0, int64_t i1) {
    if (narrow_x) detail::quantize_acts_rows(x, k, i0, i1, &xq);
    if (wide_x) detail::quantize_wide_acts_rows(x, k, i0, i1, &xw);
  };

  // Small problems are not worth waking the team (~1-2 us per parallel region).
  const double work = static_cast<double>(m) * total_n * k;
  int nth = omp_get_max_threads();
  if (work < 64.0 * 1024 || omp_in_parallel()) nth = 1;
  if (nth == 1) {
    if (quantized) quantize(0, m);
    run_share(jobs, count, total_n, m, 0, 1);
    return;
  }
  // Quantizing one row costs less than a barrier: do it before forking.
  const bool quantize_inside = quantized && m >= 2 * nth;
  if (quantized && !quantize_inside) quantize(0, m);
#pragma omp parallel num_threads(nth)
  {
    const int tid = omp_get_thread_num(), team = omp_get_num_threads();
    if (quantize_inside) {
      quantize(m * tid / team, m * (tid + 1) / team);
#pragma omp barrier
    }
    run_share(jobs, count, total_n, m, tid, team);
  }
}

Job make_job(const float* x, int64_t m, const TensorView& w, float* y) {
  TESSERA_CHECK(w.shape.size() == 2);
  const int64_t n = w.rows(), k = w.cols();
  Job job;
  job.fn = tile_fn(w.dtype);
  TESSERA_CHECK_MSG(job.fn != nullptr, "matmul: unsupported weight dtype");
  TESSERA_CHECK(k % dtype_info(w.dtype).block_size == 0);
  TESSERA_CHECK(static_cast<int64_t>(w.nbytes) >= n * row_bytes(w.dtype, k));
  GemmArgs& a = job.args;
  a.x = x;
  a.m = m;
  a.k = k;
  a.w = w.data;
  a.w_stride = row_bytes(w.dtype, k);
  a.y = y;
  a.n = n;
  job.dtype = w.dtype;
  job.quantized = dtype_info(w.dtype).quantized;
  return job;
}

// Precise activations: 16-bit where every quantized weight has a wide kernel, otherwise the
// 8-bit residual pair; int8: one 8-bit pass.
void run_with_precision(const float* x, int64_t m, int64_t k, Job* jobs, int count) {
  if (g_precision.load(std::memory_order_relaxed) == ActivationPrecision::kPrecise) {
    bool all_wide = true;
    for (int t = 0; t < count; ++t) all_wide &= !jobs[t].quantized || detail::has_wide_kernel(jobs[t].dtype);
    if (all_wide) return run_jobs(x, m, k, jobs, count, /*wide=*/true);
    if (run_with_residual(x, m, k, jobs, count)) return;
  }
  run_jobs(x, m, k, jobs, count, /*wide=*/false);
}

}  // namespace

void set_activation_precision(ActivationPrecision p) { g_precision.store(p); }
ActivationPrecision activation_precision() { return g_precision.load(); }

void matmul(const float* x, int64_t m, const TensorView& w, float* y) {
  Job job = make_job(x, m, w, y);
  run_with_precision(x, m, w.cols(), &job, 1);
}

void matmul_multi(const float* x, int64_t m, std::span<const MatmulOutput> outs) {
  constexpr int kMaxJobs = 8;
  TESSERA_CHECK(!outs.empty() && outs.size() <= kMaxJobs);
  Job jobs[kMaxJobs];
  const int64_t k = outs[0].w->cols();
  for (size_t t = 0; t < outs.size(); ++t) {
    TESSERA_CHECK(outs[t].w->cols() == k);
    jobs[t] = make_job(x, m, *outs[t].w, outs[t].y);
  }
  run_with_precision(x, m, k, jobs, static_cast<int>(outs.size()));
}

}  // namespace tessera::cpu
