#include "tokenizer/special_token_matcher.h"

#include <algorithm>

namespace tessera::tokenizer {

namespace {

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

SpecialTokenMatcher::SpecialTokenMatcher(std::vector<SpecialTokenSpec> specs) : specs_(std::move(specs)) {
  nodes_.emplace_back();
  for (size_t i = 0; i < specs_.size(); ++i) {
    const std::string& t = specs_[i].text;
    if (t.empty()) continue;
    uint32_t node = 0;
    for (char ch : t) {
      const auto c = static_cast<uint8_t>(ch);
      auto& kids = nodes_[node].children;
      auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, uint32_t{0}),
                                 [](const auto& a, const auto& b) { return a.first < b.first; });
      if (it != kids.end() && it->first == c) {
        node = it->second;
      } else {
        const auto child = static_cast<uint32_t>(nodes_.size());
        kids.insert(it, {c, child});
        nodes_.emplace_back();
        node = child;
      }
    }
    if (nodes_[node].spec_idx < 0) nodes_[node].spec_idx = static_cast<int32_t>(i);
  }
}

int32_t SpecialTokenMatcher::longest_match(std::string_view text, size_t pos, size_t* len) const {
  int32_t best = -1;
  uint32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto c = static_cast<uint8_t>(text[i]);
    const auto& kids = nodes_[node].children;
    auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, uint32_t{0}),
                               [](const auto& a, const auto& b) { return a.first < b.first; });
    if (it == kids.end() || it->first != c) break;
    node = it->second;
    if (nodes_[node].spec_idx >= 0) {
      best = nodes_[node].spec_idx;
      *len = i + 1 - pos;
    }
  }
  return best;
}

std::vector<TextFragment> SpecialTokenMatcher::split(std::string_view text) const {
  std::vector<TextFragment> out;
  if (text.empty()) return out;
  if (specs_.empty()) {
    out.push_back({text, std::nullopt});
    return out;
  }
  size_t raw_begin = 0;  // start of the pending raw fragment
  size_t pos = 0;
  while (pos < text.size()) {
    size_t len = 0;
    const int32_t idx = longest_match(text, pos, &len);
    if (idx < 0) {
      ++pos;
      continue;
    }
    const SpecialTokenSpec& spec = specs_[static_cast<size_t>(idx)];
    size_t raw_end = pos;
    if (spec.lstrip) {
      while (raw_end > raw_begin && is_ascii_space(text[raw_end - 1])) --raw_end;
    }
    if (raw_end > raw_begin) out.push_back({text.substr(raw_begin, raw_end - raw_begin), std::nullopt});
    out.push_back({text.substr(pos, len), spec.id});
    pos += len;
    if (spec.rstrip) {
      while (pos < text.size() && is_ascii_space(text[pos])) ++pos;
    }
    raw_begin = pos;
  }
  if (raw_begin < text.size()) out.push_back({text.substr(raw_begin), std::nullopt});
  return out;
}

}  // namespace tessera::tokenizer
