// StructuredOutputs: a request's StructuredOutputsParams (JSON Schema, json_object, regex,
// choice, EBNF grammar) compiled by xgrammar over the tokenizer's vocabulary into a grammar
// with its precomputed token-mask cache, and per request a matcher (a TokenConstraint) that
// gives the allowed next tokens in microseconds and advances over each sampled one. One per
// engine; thread-safe (the server compiles on its workers, so the engine thread only finds
// the grammar in the compiler's cache).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "core/token_constraint.h"
#include "tessera/sampling_params.h"
#include "tokenizer/tokenizer.h"

namespace tessera::structured {

class CompiledGrammar;  // xgrammar's, behind this module

class StructuredOutputs {
 public:
  // vocab: the model's logits width (at least the tokenizer's); stop_token_ids: the tokens a
  // complete output may end with (the engine's EOS ids). The tokenizer outlives this.
  StructuredOutputs(const tokenizer::Tokenizer& tok, int64_t vocab, std::vector<int32_t> stop_token_ids);
  ~StructuredOutputs();

  // The grammar of p (compiled once; then from the cache). An error is the request's (a
  // schema that is not JSON, a keyword the engine cannot enforce, a regex or grammar that
  // does not parse): its message names the field and the problem.
  Result<std::shared_ptr<const CompiledGrammar>> compile(const StructuredOutputsParams& p);
  // A fresh matcher at the start of the output.
  std::unique_ptr<TokenConstraint> matcher(const CompiledGrammar& g) const;

 private:
  struct Engine;  // xgrammar's tokenizer info and compiler, built on first use
  Engine& engine();
  Result<std::shared_ptr<const CompiledGrammar>> compile_uncached(const StructuredOutputsParams& p, const char* field);

  const tokenizer::Tokenizer& tok_;
  const int64_t vocab_;
  const std::vector<int32_t> stop_token_ids_;
  std::once_flag once_;
  std::unique_ptr<Engine> engine_;
  // Compiled grammars by constraint (emptied when full: requests repeat a few constraints).
  static constexpr size_t kCacheEntries = 256;
  std::mutex cache_mu_;
  std::unordered_map<std::string, std::shared_ptr<const CompiledGrammar>> cache_;
};

// A choice list as an EBNF grammar (root ::= "a" | "b"), each string a literal.
std::string choice_grammar(const std::vector<std::string>& choices);

}  // namespace tessera::structured
