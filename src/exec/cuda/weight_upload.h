// Copies checkpoint weights (mmapped, any stored dtype) to the device as bf16 or f16: rows are
// converted on the host by all cores into pinned staging buffers, whose transfers overlap
// the conversion of the next chunk.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "backend/cuda/ops.h"
#include "exec/cuda/device_buffer.h"
#include "exec/cuda/elem16.h"
#include "tensor/tensor.h"

namespace tessera::cuda {

class WeightUploader {
 public:
  // to: kBF16 or kF16, the element type of every destination.
  WeightUploader(cudaStream_t stream, DType to) : stream_(stream), to_(to) {}
  ~WeightUploader();
  Status init();
  // dst [rows, w.cols()] = the first `rows` rows of w, converted.
  Status upload(const TensorView& w, int64_t rows, Elem16* dst);
  // dst [v.size()] = v, converted.
  Status upload(const std::vector<float>& v, Elem16* dst);
  // Waits for every queued copy.
  Status finish();
  size_t bytes_uploaded() const { return bytes_; }

 private:
  // The next staging buffer, once its previous copy has finished.
  Result<Elem16*> next_staging();
  Status send(Elem16* staging, size_t count, Elem16* dst);
  Elem16 convert(float f) const;

  static constexpr size_t kStagingElems = size_t{32} << 20;  // 64 MiB each
  cudaStream_t stream_;
  DType to_;
  PinnedBuffer<Elem16> staging_[2];
  cudaEvent_t done_[2] = {nullptr, nullptr};
  bool pending_[2] = {false, false};
  int next_ = 0;
  size_t bytes_ = 0;
};

}  // namespace tessera::cuda
