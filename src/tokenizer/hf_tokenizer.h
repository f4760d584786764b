// The Hugging Face tokenizer.json tokenizer, matching HF `tokenizers` (Rust) id for id:
// added tokens -> normalizer -> pre-tokenizer -> BPE -> post-processor, and the decoder
// chain back. Special token names (bos/eos/pad/unk) come from a sibling
// tokenizer_config.json when there is one. Truncation and padding settings in the file are
// ignored: the engine manages lengths itself.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoders.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/post_processors.h"
#include "tokenizer/pre_tokenizers.h"
#include "tokenizer/tokenizer.h"

namespace tessera::tokenizer {

class HfTokenizer final : public Tokenizer {
 public:
  // path: a tokenizer.json, or a directory that holds one. Errors name the file.
  static Result<std::unique_ptr<HfTokenizer>> load(const std::string& path);
  // From memory (tests, fuzzing); config_json may be empty. Errors do not name a file.
  static Result<std::unique_ptr<HfTokenizer>> from_json(std::string_view tokenizer_json,
                                                        std::string_view config_json = {});

  Result<std::vector<TokenId>> encode(std::string_view text,
                                      bool add_special_tokens) const override;
  Result<std::string> decode(std::span<const TokenId> ids,
                             bool skip_special_tokens) const override;
  size_t vocab_size() const override { return pieces_.size(); }
  std::optional<std::string> id_to_token(TokenId id) const override;
  std::optional<TokenId> token_to_id(std::string_view token) const override;
  bool is_special(TokenId id) const override;
  const SpecialTokens& special_tokens() const override { return special_; }

  // True when the BPE runs on raw bytes for a final ByteLevel pre-tokenizer (the fast path).
  bool raw_byte_mode() const { return raw_bytes_; }

 private:
  HfTokenizer() = default;
  struct Piece {
    std::string_view text;
    bool present = false;
    bool special_content = false;  // its text is a special added token's (skipped by decode)
    bool special_added = false;    // it is an added token marked special
  };
  Status encode_segment(std::string_view segment, bool at_origin, std::vector<TokenId>* ids) const;
  Status encode_normalized(std::string_view text, bool at_origin, std::vector<TokenId>* ids) const;
  Status load_config(std::string_view config_json);

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  AddedVocabulary added_;
  std::vector<Piece> pieces_;  // by id
  SpecialTokens special_;
  bool raw_bytes_ = false;
};

}  // namespace tessera::tokenizer
