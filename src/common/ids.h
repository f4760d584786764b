// Ids are types, not bare ints: a BlockId cannot be passed where a RequestId is expected.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace tessera {

template <typename Tag, typename T>
struct StrongId {
  T value{};
  constexpr StrongId() = default;
  constexpr explicit StrongId(T v) : value(v) {}
  constexpr auto operator<=>(const StrongId&) const = default;
};

struct BlockIdTag {};
struct RequestIdTag {};
// A KV-cache block; block 0 is the null block.
using BlockId = StrongId<BlockIdTag, int32_t>;
// An engine-internal request handle (the user-facing request id string maps to one).
using RequestId = StrongId<RequestIdTag, uint64_t>;

}  // namespace tessera

template <typename Tag, typename T>
struct std::hash<tessera::StrongId<Tag, T>> {
  size_t operator()(const tessera::StrongId<Tag, T>& id) const noexcept { return std::hash<T>()(id.value); }
};
