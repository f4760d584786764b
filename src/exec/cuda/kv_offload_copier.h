// The CUDA side of KV offload (the host tier of the prefix cache, kv/host_kv_tier.h): the
// tier's blocks in pinned host memory, and each step's block copies.
//
// Stores (device -> host) run on a copy stream of their own, layer by layer, once the work
// queued on the main stream before the step is done (it wrote those blocks); the step's
// forward waits for layer l's stores (layer_events(set)[l]) just before it writes layer l's
// K/V, so they overlap the layers before instead of delaying the whole step. Loads (host ->
// device) run on the main stream ahead of the forward, after every store of the step (a
// fresh block may be stored from and then loaded into). Across steps the order holds
// through the main stream: a step's forward waited for all of its stores, so the next
// step's loads and copies see them done.
//
// The events come in two sets, one per step in flight (the runner's buffer sets): a set is
// recorded again only two steps later, once the step that waited on it has completed, so a
// wait never meets a record meant for a later step (whenever CUDA resolves a graph's wait
// nodes). Decode graphs wait on the set given at replay (cudaGraphExecEventWaitNodeSetEvent).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "exec/cuda/cuda_model.h"
#include "exec/cuda/device_buffer.h"
#include "kv/kv_block_copy.h"

namespace tessera::cuda {

class KvOffloadCopier {
 public:
  KvOffloadCopier() = default;
  ~KvOffloadCopier();
  KvOffloadCopier(const KvOffloadCopier&) = delete;
  KvOffloadCopier& operator=(const KvOffloadCopier&) = delete;

  // A tier of num_host_blocks blocks, each the K and V slabs (slab_elems elements) of every
  // layer of one device block.
  Status init(int32_t num_host_blocks, int64_t num_layers, int64_t slab_elems);
  bool enabled() const { return num_host_blocks_ > 0; }

  static constexpr int kSets = 2;

  // Queues the step's copies: stores on the copy stream (recording event set `set`), loads on
  // `stream`. No copies: nothing queued (the set keeps older, completed records).
  Status enqueue(const KvCopies& copies, const CudaKvCache& kv, cudaStream_t stream, int set);

  // The events (of one set) the forward waits for before writing each layer's K/V (graph
  // capture: waits with cudaEventWaitExternal); null when offload is off.
  const cudaEvent_t* layer_events(int set) const {
    return enabled() ? layer_stored_[static_cast<size_t>(set)].data() : nullptr;
  }
  // The layer whose event `e` is, in any set; -1: none of them.
  int layer_of(cudaEvent_t e) const;

 private:
  Status check(const KvBlockCopy& c, const CudaKvCache& kv) const;

  int32_t num_host_blocks_ = 0;
  int64_t num_layers_ = 0, slab_elems_ = 0;
  PinnedBuffer<Elem16> host_;  // [num_host_blocks][2 x layers][slab]: K, V of layer 0, then 1, ...
  cudaStream_t copy_stream_ = nullptr;
  cudaEvent_t step_begin_ = nullptr;         // on the main stream: what the stores must follow
  std::vector<cudaEvent_t> layer_stored_[kSets];  // on the copy stream: layer l's stores done
};

}  // namespace tessera::cuda
