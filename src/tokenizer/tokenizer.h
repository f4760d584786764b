// The one tokenizer interface every backend implements: HF tokenizer.json, GGUF-embedded
// vocabularies and SentencePiece .model files. Thread-safe for concurrent const use.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tessera::tokenizer {

using TokenId = int32_t;

// Special tokens and flags a chat template and the engine need.
struct SpecialTokens {
  std::optional<TokenId> bos_id;
  std::optional<TokenId> eos_id;
  std::optional<TokenId> pad_id;
  std::optional<TokenId> unk_id;
  std::string bos_token;  // text of bos_id, "" when absent
  std::string eos_token;  // text of eos_id, "" when absent
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Text to ids. add_special_tokens applies the post-processor (BOS/EOS templates) the way
  // HF `tokenizer(text, add_special_tokens=...)` does. Invalid UTF-8 input is an error.
  virtual Result<std::vector<TokenId>> encode(std::string_view text,
                                              bool add_special_tokens) const = 0;

  // Ids to text, as HF `decode(ids, skip_special_tokens=...)` with
  // clean_up_tokenization_spaces=false. Out-of-range ids are an error.
  virtual Result<std::string> decode(std::span<const TokenId> ids,
                                     bool skip_special_tokens) const = 0;

  // Vocabulary including added tokens (the largest id + 1).
  virtual size_t vocab_size() const = 0;
  // The stored piece for an id (e.g. "Ġthe", "▁the", "<0x0A>"), not its decoded text.
  virtual std::optional<std::string> id_to_token(TokenId id) const = 0;
  virtual std::optional<TokenId> token_to_id(std::string_view token) const = 0;
  // True for added tokens marked special (control tokens in GGUF/SentencePiece terms).
  virtual bool is_special(TokenId id) const = 0;

  virtual const SpecialTokens& special_tokens() const = 0;
};

// Loads a tokenizer from a tokenizer.json, a model directory (tokenizer.json, else
// tokenizer.model), a .gguf file (its embedded vocabulary) or a SentencePiece .model.
// Errors name the file and the problem.
Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path);

}  // namespace tessera::tokenizer
