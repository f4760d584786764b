// HF tokenizers post-processors for a single sequence: TemplateProcessing, ByteLevel (a no-op
// on ids), RobertaProcessing, BertProcessing, Sequence.
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tokenizer/tokenizer.h"

namespace tessera::tokenizer {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Adds the special tokens around one encoded sequence when add_special_tokens is set.
  virtual void process(std::vector<TokenId>* ids, bool add_special_tokens) const = 0;
};

// Null JSON gives a null pointer (ids pass through unchanged).
Result<std::unique_ptr<PostProcessor>> make_post_processor(const nlohmann::json& j);

}  // namespace tessera::tokenizer
