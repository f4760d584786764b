#include "exec/cuda/kv_offload_copier.h"

#include <climits>

namespace tessera::cuda {

KvOffloadCopier::~KvOffloadCopier() {
  if (copy_stream_ != nullptr) cudaStreamSynchronize(copy_stream_);
  for (const auto& set : layer_stored_) {
    for (cudaEvent_t e : set) cudaEventDestroy(e);
  }
  if (step_begin_ != nullptr) cudaEventDestroy(step_begin_);
  if (copy_stream_ != nullptr) cudaStreamDestroy(copy_stream_);
}

Status KvOffloadCopier::init(int32_t num_host_blocks, int64_t num_layers, int64_t slab_elems) {
  if (num_host_blocks <= 0) return Status();
  num_layers_ = num_layers;
  slab_elems_ = slab_elems;
  const size_t elems = static_cast<size_t>(num_host_blocks) * static_cast<size_t>(2 * num_layers * slab_elems);
  if (Status st = host_.allocate(elems, "the KV offload tier"); !st.ok()) return st;
  TESSERA_CUDA_TRY(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking), "KV offload stream");
  TESSERA_CUDA_TRY(cudaEventCreateWithFlags(&step_begin_, cudaEventDisableTiming), "KV offload events");
  for (auto& set : layer_stored_) {
    set.assign(static_cast<size_t>(num_layers), nullptr);
    for (cudaEvent_t& e : set) {
      TESSERA_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "KV offload events");
    }
  }
  num_host_blocks_ = num_host_blocks;
  return Status();
}

Status KvOffloadCopier::check(const KvBlockCopy& c, const CudaKvCache& kv) const {
  if (c.host_block < 0 || c.host_block >= num_host_blocks_ || c.device_block <= 0 ||
      static_cast<int64_t>(c.device_block) * slab_elems_ >= kv.layer_elems) {
    return Status::error("KV offload copy names a block out of range");
  }
  return Status();
}

int KvOffloadCopier::layer_of(cudaEvent_t e) const {
  for (const auto& set : layer_stored_) {
    for (size_t l = 0; l < set.size(); ++l) {
      if (set[l] == e) return static_cast<int>(l);
    }
  }
  return -1;
}

Status KvOffloadCopier::enqueue(const KvCopies& copies, const CudaKvCache& kv, cudaStream_t stream, int set) {
  if (copies.empty()) return Status();
  if (!enabled()) return Status::error("KV offload copies without a host tier");
  if (set < 0 || set >= kSets) return Status::error("KV offload: no such event set");
  std::vector<cudaEvent_t>& layer_stored = layer_stored_[static_cast<size_t>(set)];
  for (const auto* list : {&copies.stores, &copies.loads}) {
    for (const KvBlockCopy& c : *list) {
      if (Status s = check(c, kv); !s.ok()) return s;
    }
  }
  const size_t slab = static_cast<size_t>(slab_elems_) * sizeof(Elem16);
  auto device_slab = [&](int32_t block, int64_t layer, int kv_half) {
    Elem16* base = kv_half == 0 ? kv.k(layer) : kv.v(layer);
    return reinterpret_cast<char*>(base) + static_cast<size_t>(block) * slab;
  };
  auto host_block = [&](int32_t block) {
    return reinterpret_cast<char*>(host_.get()) + static_cast<size_t>(block) * static_cast<size_t>(2 * num_layers_) * slab;
  };

  if (!copies.stores.empty()) {
    TESSERA_CUDA_TRY(cudaEventRecord(step_begin_, stream), "KV offload");
    TESSERA_CUDA_TRY(cudaStreamWaitEvent(copy_stream_, step_begin_, 0), "KV offload");
    // Per layer one batch of the K and V slabs of every stored block.
    const size_t n = 2 * copies.stores.size();
    std::vector<void*> dsts(n);
    std::vector<const void*> srcs(n);
    std::vector<size_t> sizes(n, slab);
    cudaMemcpyAttributes attr{};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    attr.flags = cudaMemcpyFlagPreferOverlapWithCompute;
    size_t attr_index = 0;
    for (int64_t l = 0; l < num_layers_; ++l) {
      for (size_t i = 0; i < copies.stores.size(); ++i) {
        const KvBlockCopy& c = copies.stores[i];
        for (int half = 0; half < 2; ++half) {
          dsts[2 * i + half] = host_block(c.host_block) + (2 * l + half) * slab;
          srcs[2 * i + half] = device_slab(c.device_block, l, half);
        }
      }
      TESSERA_CUDA_TRY(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), n, &attr, &attr_index, 1,
                                            copy_stream_),
                       "KV offload store");
      TESSERA_CUDA_TRY(cudaEventRecord(layer_stored[static_cast<size_t>(l)], copy_stream_), "KV offload");
    }
  }
  if (!copies.loads.empty()) {
    // A fresh block may have been stored from first: loads follow every store of the step.
    if (!copies.stores.empty()) {
      TESSERA_CUDA_TRY(cudaStreamWaitEvent(stream, layer_stored.back(), 0), "KV offload");
    }
    // The device's slabs of a block sit layer_elems apart (K and V of every layer), the host's
    // back to back: one strided copy per block.
    const size_t pitch = static_cast<size_t>(kv.layer_elems) * sizeof(Elem16);
    const size_t rows = static_cast<size_t>(2 * num_layers_);
    for (const KvBlockCopy& c : copies.loads) {
      char* dev = device_slab(c.device_block, 0, 0);
      char* host = host_block(c.host_block);
      if (pitch <= static_cast<size_t>(INT32_MAX)) {
        TESSERA_CUDA_TRY(cudaMemcpy2DAsync(dev, pitch, host, slab, slab, rows, cudaMemcpyHostToDevice, stream),
                         "KV offload load");
        continue;
      }
      for (size_t j = 0; j < rows; ++j) {  // pitches past what 2D copies take
        TESSERA_CUDA_TRY(cudaMemcpyAsync(dev + j * pitch, host + j * slab, slab, cudaMemcpyHostToDevice, stream),
                         "KV offload load");
      }
    }
  }
  return Status();
}

}  // namespace tessera::cuda
