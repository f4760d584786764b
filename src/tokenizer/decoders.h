// HF tokenizers decoders: ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace,
// WordPiece, BPEDecoder, Sequence. Each rewrites the token strings (decode_chain); the
// tokenizer joins the result.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tessera::tokenizer {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual Status decode_chain(std::vector<std::string>* tokens) const = 0;
};

// Null JSON gives a null pointer (tokens are then joined with spaces, as HF does).
Result<std::unique_ptr<Decoder>> make_decoder(const nlohmann::json& j);

}  // namespace tessera::tokenizer
