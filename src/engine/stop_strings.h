// Stop strings over a growing output text: the first occurrence of any stop string ends the
// request; the text is cut before it (or after it with include_stop_str_in_output).
#pragma once

#include <string>
#include <vector>

namespace tessera {

class StopStringMatcher {
 public:
  StopStringMatcher() = default;
  StopStringMatcher(std::vector<std::string> stops, bool include_in_output)
      : stops_(std::move(stops)), include_(include_in_output) {}

  bool empty() const { return stops_.empty(); }
  // Looks at text (the whole output so far, growing between calls); true once a stop string
  // appears. Only the part that could hold a new match is searched.
  bool check(const std::string& text);
  bool matched() const { return match_pos_ != std::string::npos; }
  const std::string& matched_string() const { return stops_[match_idx_]; }
  // The output text as returned to the user once matched.
  std::string truncate(const std::string& text) const;

 private:
  std::vector<std::string> stops_;
  bool include_ = false;
  size_t searched_ = 0;  // text[0, searched_) holds no match start
  size_t match_pos_ = std::string::npos;
  size_t match_idx_ = 0;
};

}  // namespace tessera
