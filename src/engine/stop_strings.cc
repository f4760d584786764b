#include "engine/stop_strings.h"

#include <algorithm>

namespace tessera {

bool StopStringMatcher::check(const std::string& text) {
  if (matched()) return true;
  size_t longest = 0;
  for (const auto& s : stops_) longest = std::max(longest, s.size());
  // A match may start up to longest - 1 bytes before the new text.
  const size_t from = searched_ >= longest ? searched_ - (longest - 1) : 0;
  size_t best = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t pos = text.find(stops_[i], from);
    if (pos != std::string::npos && (best == std::string::npos || pos < best)) {
      best = pos;
      match_idx_ = i;
    }
  }
  searched_ = text.size();
  if (best == std::string::npos) return false;
  match_pos_ = best;
  return true;
}

std::string StopStringMatcher::truncate(const std::string& text) const {
  if (!matched()) return text;
  const size_t end = include_ ? match_pos_ + stops_[match_idx_].size() : match_pos_;
  return text.substr(0, std::min(end, text.size()));
}

}  // namespace tessera
