// Copies checkpoint weights (mmapped, any stored dtype) to the device as bf16: rows are
// converted on the host by all cores into pinned staging buffers, whose transfers overlap
// the conversion of the next chunk.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "backend/cuda/ops.h"
#include "exec/cuda/device_buffer.h"
#include "tensor/tensor.h"

namespace tessera::cuda {

class WeightUploader {
 public:
  explicit WeightUploader(cudaStream_t stream) : stream_(stream) {}
  ~WeightUploader();
  Status init();
  // dst [rows, w.cols()] = the first `rows` rows of w, as bf16.
  Status upload(const TensorView& w, int64_t rows, bf16* dst);
  // dst [v.size()] = v as bf16.
  Status upload(const std::vector<float>& v, bf16* dst);
  // Waits for every queued copy.
  Status finish();
  size_t bytes_uploaded() const { return bytes_; }

 private:
  // The next staging buffer, once its previous copy has finished.
  Result<bf16*> next_staging();
  Status send(bf16* staging, size_t count, bf16* dst);

  static constexpr size_t kStagingElems = size_t{32} << 20;  // 64 MiB of bf16 each
  cudaStream_t stream_;
  PinnedBuffer<bf16> staging_[2];
  cudaEvent_t done_[2] = {nullptr, nullptr};
  bool pending_[2] = {false, false};
  int next_ = 0;
  size_t bytes_ = 0;
};

}  // namespace tessera::cuda
