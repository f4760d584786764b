// SentencePiece .model files through libsentencepiece. Encoding is the library's (its
// normalizer and algorithm, exactly); control pieces written in the text (e.g. "[INST]",
// "</s>") are matched first, as HF's added tokens are. Decoding follows HF's decoders for
// SentencePiece models (see vocab_common.h).
#pragma once

#include <memory>
#include <string>

#include "tokenizer/special_token_matcher.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_common.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace tessera::tokenizer {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  static Result<std::unique_ptr<SentencePieceTokenizer>> load(const std::string& path);
  ~SentencePieceTokenizer() override;

  // add_special_tokens adds BOS (as HF's LlamaTokenizer: add_bos_token, no EOS).
  Result<std::vector<TokenId>> encode(std::string_view text, bool add_special_tokens) const override;
  Result<std::string> decode(std::span<const TokenId> ids, bool skip_special_tokens) const override;
  size_t vocab_size() const override { return entries_.size(); }
  std::optional<std::string> id_to_token(TokenId id) const override;
  std::optional<TokenId> token_to_id(std::string_view token) const override;
  bool is_special(TokenId id) const override;
  const SpecialTokens& special_tokens() const override { return special_; }

  // The library's encoding of text with no special-token matching and no BOS/EOS: control
  // pieces written in the text stay text. mistral-common encodes message contents so.
  Result<std::vector<TokenId>> encode_ordinary(std::string_view text) const;

  bool adds_dummy_prefix() const { return add_dummy_prefix_; }

 private:
  SentencePieceTokenizer();

  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string source_;
  std::vector<VocabEntry> entries_;
  PieceMap piece_to_id_;
  SpecialTokenMatcher matcher_;
  SpecialTokens special_;
  bool add_dummy_prefix_ = true;
};

}  // namespace tessera::tokenizer
