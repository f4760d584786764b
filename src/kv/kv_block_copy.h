// One block copy between the device KV cache and the host tier of the prefix cache
// (host_kv_tier.h): every layer's K and V of device block `device_block` to or from host
// block `host_block`.
#pragma once

#include <cstdint>

namespace tessera {

struct KvBlockCopy {
  int32_t device_block = 0;
  int32_t host_block = 0;
  bool operator==(const KvBlockCopy&) const = default;
};

}  // namespace tessera
