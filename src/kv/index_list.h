// IndexList: a doubly linked list over the indices 0 .. n-1, its links in two arrays, so
// moving an index is O(1) and allocates nothing. The KV block pool's free list and the
// host tier's least-recently-used order are both one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/check.h"

namespace tessera {

class IndexList {
 public:
  explicit IndexList(int32_t n = 0)
      : prev_(static_cast<size_t>(n), -1), next_(static_cast<size_t>(n), -1), in_(static_cast<size_t>(n), false) {}

  int32_t front() const { return head_; }  // -1 when empty
  int32_t next(int32_t id) const { return next_[static_cast<size_t>(id)]; }  // -1 after the back
  bool contains(int32_t id) const { return in_[static_cast<size_t>(id)]; }
  int32_t size() const { return size_; }

  void push_back(int32_t id) {
    TESSERA_CHECK(!contains(id));
    prev_[static_cast<size_t>(id)] = tail_;
    next_[static_cast<size_t>(id)] = -1;
    if (tail_ >= 0) {
      next_[static_cast<size_t>(tail_)] = id;
    } else {
      head_ = id;
    }
    tail_ = id;
    in_[static_cast<size_t>(id)] = true;
    ++size_;
  }

  void erase(int32_t id) {
    TESSERA_CHECK(contains(id));
    const int32_t p = prev_[static_cast<size_t>(id)], n = next_[static_cast<size_t>(id)];
    if (p >= 0) {
      next_[static_cast<size_t>(p)] = n;
    } else {
      head_ = n;
    }
    if (n >= 0) {
      prev_[static_cast<size_t>(n)] = p;
    } else {
      tail_ = p;
    }
    prev_[static_cast<size_t>(id)] = next_[static_cast<size_t>(id)] = -1;
    in_[static_cast<size_t>(id)] = false;
    --size_;
  }

  // Links consistent, size right, membership flags matching; "" when all hold.
  std::string check() const {
    int32_t count = 0, prev = -1;
    for (int32_t id = head_; id >= 0; id = next(id)) {
      if (prev_[static_cast<size_t>(id)] != prev) return "list back link broken at " + std::to_string(id);
      if (!contains(id)) return "list member " + std::to_string(id) + " not flagged";
      prev = id;
      if (++count > static_cast<int32_t>(in_.size())) return "list has a cycle";
    }
    if (prev != tail_) return "list tail mismatch";
    if (count != size_) return "list size mismatch";
    int32_t flagged = 0;
    for (bool f : in_) flagged += f;
    if (flagged != size_) return "list membership flags mismatch";
    return "";
  }

 private:
  std::vector<int32_t> prev_, next_;
  std::vector<bool> in_;
  int32_t head_ = -1, tail_ = -1, size_ = 0;
};

}  // namespace tessera
