#include "exec/cuda/weight_upload.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/dequantize.h"
#include "common/half.h"

namespace tessera::cuda {

WeightUploader::~WeightUploader() {
  for (cudaEvent_t e : done_) {
    if (e != nullptr) cudaEventDestroy(e);
  }
}

Status WeightUploader::init() {
  for (int i = 0; i < 2; ++i) {
    if (Status s = staging_[i].allocate(kStagingElems, "weight staging"); !s.ok()) return s;
    TESSERA_CUDA_TRY(cudaEventCreateWithFlags(&done_[i], cudaEventDisableTiming), "cudaEventCreate");
  }
  return Status();
}

Result<Elem16*> WeightUploader::next_staging() {
  const int i = next_;
  next_ = 1 - next_;
  if (pending_[i]) TESSERA_CUDA_TRY(cudaEventSynchronize(done_[i]), "weight upload");
  pending_[i] = false;
  return staging_[i].get();
}

Elem16 WeightUploader::convert(float f) const { return to_ == DType::kF16 ? f32_to_f16(f) : f32_to_bf16(f); }

Status WeightUploader::send(Elem16* staging, size_t count, Elem16* dst) {
  const int i = staging == staging_[0].get() ? 0 : 1;
  // cudaMemcpyDefault: dst may be pinned host memory (offloaded weights, cpu_offload_gb).
  TESSERA_CUDA_TRY(cudaMemcpyAsync(dst, staging, count * sizeof(Elem16), cudaMemcpyDefault, stream_),
                   "weight upload");
  TESSERA_CUDA_TRY(cudaEventRecord(done_[i], stream_), "cudaEventRecord");
  pending_[i] = true;
  bytes_ += count * sizeof(Elem16);
  return Status();
}

Status WeightUploader::upload(const TensorView& w, int64_t rows, Elem16* dst) {
  const int64_t cols = w.cols();
  const int64_t rows_per_chunk = std::max<int64_t>(1, static_cast<int64_t>(kStagingElems) / cols);
  if (cols > static_cast<int64_t>(kStagingElems)) return Status::error("weight row too long to stage");
  for (int64_t r0 = 0; r0 < rows; r0 += rows_per_chunk) {
    const int64_t nr = std::min(rows_per_chunk, rows - r0);
    auto staging = next_staging();
    if (!staging.ok()) return staging.status();
    Elem16* out = *staging;
    const bool same = w.dtype == to_;
#pragma omp parallel
    {
      std::vector<float> row(same ? 0 : static_cast<size_t>(cols));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < nr; ++r) {
        Elem16* o = out + r * cols;
        if (same) {
          std::memcpy(o, w.row(r0 + r), static_cast<size_t>(cols) * sizeof(Elem16));
        } else {
          cpu::dequantize_row(w.dtype, w.row(r0 + r), row.data(), cols);
          for (int64_t c = 0; c < cols; ++c) o[c] = convert(row[c]);
        }
      }
    }
    if (Status s = send(out, static_cast<size_t>(nr * cols), dst + r0 * cols); !s.ok()) return s;
  }
  return Status();
}

Status WeightUploader::upload(const std::vector<float>& v, Elem16* dst) {
  if (v.size() > kStagingElems) return Status::error("weight vector too long to stage");
  auto staging = next_staging();
  if (!staging.ok()) return staging.status();
  for (size_t i = 0; i < v.size(); ++i) (*staging)[i] = convert(v[i]);
  return send(*staging, v.size(), dst);
}

Status WeightUploader::finish() {
  TESSERA_CUDA_TRY(cudaStreamSynchronize(stream_), "weight upload");
  pending_[0] = pending_[1] = false;
  return Status();
}

}  // namespace tessera::cuda
