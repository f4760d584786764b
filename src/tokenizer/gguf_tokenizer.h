// Tokenizer over a GGUF-embedded vocabulary: llama.cpp's SPM, byte-level BPE (with the
// regex pre-tokenizer named by tokenizer.ggml.pre) and WordPiece, behind the Tokenizer
// interface. Control, user-defined and unknown tokens are matched in the text first, as
// HF added tokens (llama.cpp's parse_special = true).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "tokenizer/byte_level_bpe.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/regex_splitter.h"
#include "tokenizer/special_token_matcher.h"
#include "tokenizer/spm_merge.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/wordpiece.h"

namespace tessera::tokenizer {

class GgufTokenizer final : public Tokenizer {
 public:
  // source names the file in errors.
  static Result<std::unique_ptr<GgufTokenizer>> create(GgufVocab vocab, const std::string& source);

  Result<std::vector<TokenId>> encode(std::string_view text, bool add_special_tokens) const override;
  Result<std::string> decode(std::span<const TokenId> ids, bool skip_special_tokens) const override;
  size_t vocab_size() const override { return vocab_.entries.size(); }
  std::optional<std::string> id_to_token(TokenId id) const override;
  std::optional<TokenId> token_to_id(std::string_view token) const override;
  bool is_special(TokenId id) const override;
  const SpecialTokens& special_tokens() const override { return special_; }

  const GgufVocab& vocab() const { return vocab_; }

 private:
  GgufTokenizer() = default;
  void encode_fragment(std::string_view text, bool after_special, std::vector<TokenId>& out) const;

  GgufVocab vocab_;
  SpecialTokens special_;
  SpecialTokenMatcher matcher_;
  // One of these, by vocab_.kind; they point into vocab_, so the tokenizer never moves.
  std::optional<SpmMerger> spm_;
  std::optional<ByteLevelBpe> bpe_;
  std::optional<RegexSplitter> splitter_;
  std::optional<WordPiece> wpm_;
};

// Opens a .gguf file and builds the tokenizer of its vocabulary.
Result<std::unique_ptr<Tokenizer>> load_gguf_tokenizer(const std::string& path);

}  // namespace tessera::tokenizer
