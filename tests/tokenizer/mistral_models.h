// mistral-common's SentencePiece models (v1, v2, v3, v7) in the shared test data, for the
// tokenizer's and the Mistral chat encoding's tests.
#pragma once

#include <memory>
#include <string>

#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/vocab_test_util.h"

namespace tessera::testing {

inline std::string mistral_dir() { return shared_data() + "/tokenizer-tests/mistral-common"; }

inline std::string mistral_model_path(int version) {
  switch (version) {
    case 1: return mistral_dir() + "/tokenizer.model.v1";
    case 2: return mistral_dir() + "/mistral_instruct_tokenizer_240216.model.v2";
    case 3: return mistral_dir() + "/mistral_instruct_tokenizer_240323.model.v3";
    default: return mistral_dir() + "/mistral_instruct_tokenizer_241114.model.v7";
  }
}

// The model of that version, or null when the shared data lacks it.
inline std::unique_ptr<tokenizer::SentencePieceTokenizer> load_mistral_model(int version) {
  auto t = tokenizer::SentencePieceTokenizer::load(mistral_model_path(version));
  if (!t.ok()) return nullptr;
  return std::move(t.value());
}

}  // namespace tessera::testing
