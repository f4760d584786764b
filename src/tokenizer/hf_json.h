// A fast reader for tokenizer.json. The model's vocab and merges (almost all of a 33 MB file)
// are streamed into flat arrays; everything else becomes a small nlohmann::json tree for the
// component loaders. The input is hostile: any malformed byte is an error, never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tessera::tokenizer {

struct TokenizerJson {
  struct Span {
    uint32_t offset;
    uint32_t length;
  };
  struct VocabEntry {
    Span token;  // into pool
    int64_t id;
  };
  struct Merge {
    Span left;   // into pool
    Span right;  // into pool
  };

  nlohmann::json root;  // the document minus model.vocab / model.merges when those were fast
  std::string pool;     // bytes of vocab and merge strings, back to back

  bool has_vocab = false;  // model.vocab was an object of integers (BPE, WordPiece, WordLevel)
  std::vector<VocabEntry> vocab;
  bool has_merges = false;  // model.merges was an array of "a b" strings or [a, b] pairs
  std::vector<Merge> merges;

  std::string_view str(Span s) const { return std::string_view(pool).substr(s.offset, s.length); }
};

// Parses a whole tokenizer.json. Errors say what is wrong and at which byte.
Result<TokenizerJson> parse_tokenizer_json(std::string_view text);

// Parses any JSON text (tokenizer_config.json) into nlohmann::json with the same hostile-input
// checks (depth limit, UTF-8, no exceptions).
Result<nlohmann::json> parse_json(std::string_view text);

}  // namespace tessera::tokenizer
