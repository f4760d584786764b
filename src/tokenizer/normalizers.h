// HF tokenizers normalizers (NFC, NFKC, NFD, NFKD, Lowercase, Prepend, Replace, Strip,
// StripAccents, BertNormalizer, Sequence). Encoding never needs offsets, so a normalizer is
// a plain string transform.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tessera::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // s is valid UTF-8 and stays so.
  virtual Status normalize(std::string* s) const = 0;
};

// Builds a normalizer from its tokenizer.json object; null JSON gives a null pointer.
Result<std::unique_ptr<Normalizer>> make_normalizer(const nlohmann::json& j);

}  // namespace tessera::tokenizer
