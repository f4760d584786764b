// The BPE model of HF tokenizers: vocab, ranked merges, byte_fallback, unk_token + fuse_unk,
// ignore_merges, continuing_subword_prefix / end_of_word_suffix (dropout is ignored: encoding
// is deterministic). Merging works on ids through a pair -> (rank, id) hash map, with a
// per-thread word cache in front.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tokenizer/hf_json.h"
#include "tokenizer/token_maps.h"
#include "tokenizer/tokenizer.h"

namespace tessera::tokenizer {

class BpeModel {
 public:
  // model is the tokenizer.json "model" object; vocab and merges come from doc's fast path
  // (the pool is taken over). Errors name the field.
  static Result<std::unique_ptr<BpeModel>> load(TokenizerJson* doc, const nlohmann::json& model);

  // Switches to pieces of raw bytes, each byte standing for its ByteLevel char (the
  // pre-tokenizer then skips the mapping). False when the options make that unsound.
  bool enable_raw_bytes();

  // Appends the ids of one pre-token.
  Status tokenize(std::string_view piece, std::vector<TokenId>* out) const;

  std::optional<TokenId> token_to_id(std::string_view token) const;
  std::optional<std::string_view> id_to_token(TokenId id) const;
  size_t num_entries() const { return num_entries_; }  // HF get_vocab_size()
  TokenId max_id() const { return static_cast<TokenId>(by_id_.size()) - 1; }
  const std::optional<std::string>& unk_token() const { return unk_token_; }

 private:
  struct IdSpan {
    uint32_t offset = 0;
    int32_t length = -1;  // -1: no token has this id
  };
  struct Symbols;

  Status initial_symbols(std::string_view piece, Symbols* sym) const;
  void add_unit(std::string_view unit, int32_t id, Symbols* sym) const;
  void merge(Symbols* sym) const;
  Status unk_id(int32_t* id) const;

  std::string pool_;  // token bytes
  StringIdMap vocab_;
  StringIdMap byte_vocab_;  // raw-bytes form of the ByteLevel tokens (raw mode)
  std::string byte_pool_;   // keys of byte_vocab_
  std::vector<IdSpan> by_id_;
  size_t num_entries_ = 0;
  PairMap merges_;
  std::optional<std::string> unk_token_;
  std::string prefix_;  // continuing_subword_prefix
  std::string suffix_;  // end_of_word_suffix
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  bool raw_bytes_ = false;
  std::array<int32_t, 256> fallback_ids_{};  // <0xXX> ids, -1 if missing
  std::array<int32_t, 256> raw_unit_ids_{};  // id of each byte's ByteLevel char, -1 if missing
  uint64_t serial_ = 0;                      // keys this model's entries in the word cache
};

}  // namespace tessera::tokenizer
