// Helpers shared by the tool-call parser tests: the reference cases under
// tests/data/tool_calls/, and streaming a reply in chosen pieces while checking the delta
// protocol (each call's first delta carries a non-empty id and its name, indices in order).
#pragma once

#include <cstddef>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/test_paths.h"
#include "server/tool_parsers/tool_parser.h"

namespace tessera::server::tool_parser_test {

// tests/data/tool_calls/<parser>.json; null when it is missing.
inline nlohmann::ordered_json load_cases(const std::string& parser) {
  std::ifstream in(testing::test_data() + "/tool_calls/" + parser + ".json");
  return in ? nlohmann::ordered_json::parse(in) : nlohmann::ordered_json();
}

struct Streamed {
  std::string content;
  std::vector<ToolCall> calls;
  std::string error;  // the first broken rule of the delta protocol
};

inline void absorb(Streamed& s, const ToolStreamDelta& d) {
  s.content += d.content;
  for (const ToolCallDelta& c : d.tool_calls) {
    const int n = static_cast<int>(s.calls.size());
    if (c.index == n) {
      if (!c.id || !c.name || c.id->empty()) s.error = "the first delta of a call lacks its id or name";
      s.calls.push_back({c.id.value_or(""), c.name.value_or(""), c.arguments});
    } else if (c.index == n - 1) {
      if (c.id || c.name) s.error = "id or name sent twice";
      s.calls.back().arguments += c.arguments;
    } else {
      s.error = "call index " + std::to_string(c.index) + " out of order after " + std::to_string(n);
    }
  }
}

// Feeds `text` cut at `cuts` (ascending byte offsets), then finishes.
inline Streamed stream(ToolParser& p, std::string_view text, const std::vector<size_t>& cuts) {
  Streamed s;
  size_t prev = 0;
  for (size_t cut : cuts) {
    if (cut <= prev || cut >= text.size()) continue;
    absorb(s, p.feed(text.substr(prev, cut - prev)));
    prev = cut;
  }
  absorb(s, p.feed(text.substr(prev)));
  absorb(s, p.finish());
  return s;
}

inline std::vector<size_t> every_byte(size_t n) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < n; ++i) cuts.push_back(i);
  return cuts;
}

inline std::vector<size_t> random_cuts(size_t n, std::mt19937& rng, int max_piece) {
  std::uniform_int_distribution<int> step(1, max_piece);
  std::vector<size_t> cuts;
  for (size_t i = static_cast<size_t>(step(rng)); i < n; i += static_cast<size_t>(step(rng))) cuts.push_back(i);
  return cuts;
}

}  // namespace tessera::server::tool_parser_test
