// HF's AddedVocabulary: tokens added on top of the model (special or not), found in the
// input before normalization (normalized=false) or after it (normalized=true) by a
// leftmost-longest trie, with single_word / lstrip / rstrip handled as HF does.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tokenizer/tokenizer.h"

namespace tessera::tokenizer {

class BpeModel;
class Normalizer;

struct AddedToken {
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
  bool operator==(const AddedToken&) const = default;
};

class AddedVocabulary {
 public:
  // A piece of the input: an added token (id >= 0, its span includes stripped spaces) or
  // plain text (id == -1).
  struct Segment {
    size_t start;
    size_t end;
    TokenId id;
  };

  // Adds the tokenizer.json "added_tokens" one by one in file order, assigning ids as HF does
  // (an existing added or model token keeps its id, a new one gets the next free id).
  static Result<AddedVocabulary> build(const nlohmann::json& added_tokens, const BpeModel& model,
                                       const Normalizer* normalizer);

  // Splits text on the non-normalized (normalized_set=false) or normalized tokens. Empty text
  // gives no segments.
  void split(std::string_view text, bool normalized_set, std::vector<Segment>* out) const;
  bool has_tokens(bool normalized_set) const {
    return !(normalized_set ? normalized_trie_ : raw_trie_).patterns.empty();
  }

  std::optional<TokenId> token_to_id(std::string_view content) const;
  const AddedToken* token(TokenId id) const;  // the added token with this id, if any
  // The text decode and id_to_token use: the normalized content for normalized tokens the
  // normalizer changes, else the content.
  std::optional<std::string_view> decode_text(TokenId id) const;
  bool is_special_content(std::string_view content) const {
    return special_set_.count(std::string(content)) != 0;
  }
  TokenId max_id() const { return max_id_; }  // -1 when empty

 private:
  struct Trie {
    struct Node {
      std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
      int32_t pattern = -1;  // first pattern ending here
    };
    std::vector<Node> nodes{1};
    std::vector<TokenId> patterns;  // pattern index -> id
    bool first_byte[256] = {};
    void add(std::string_view s, TokenId id);
    // Longest pattern starting at pos: its length, or 0.
    size_t longest_at(std::string_view text, size_t pos, int32_t* pattern) const;
  };

  std::unordered_map<std::string, TokenId> by_content_;
  std::unordered_map<TokenId, AddedToken> by_id_;
  std::unordered_map<TokenId, std::string> decode_text_;
  std::unordered_set<std::string> special_set_;
  Trie raw_trie_;
  Trie normalized_trie_;
  TokenId max_id_ = -1;
};

}  // namespace tessera::tokenizer
