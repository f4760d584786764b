// One block copy between the device KV cache and the host tier of the prefix cache
// (host_kv_tier.h): every layer's K and V of device block `device_block` to or from host
// block `host_block`.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera {

struct KvBlockCopy {
  int32_t device_block = 0;
  int32_t host_block = 0;
  bool operator==(const KvBlockCopy&) const = default;
};

// The copies a step's allocations need before its forward: stores (device -> host) first,
// then loads (host -> device).
struct KvCopies {
  std::vector<KvBlockCopy> stores;
  std::vector<KvBlockCopy> loads;
  bool empty() const { return stores.empty() && loads.empty(); }
};

}  // namespace tessera
