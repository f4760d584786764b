// The vocabulary embedded in a GGUF file (tokenizer.ggml.* metadata), read and validated as
// hostile input, with llama.cpp's defaults for what the file leaves out.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "loader/gguf.h"
#include "tokenizer/vocab_common.h"

namespace tessera::tokenizer {

enum class GgufVocabKind {
  kSpm,  // "llama": SentencePiece pieces with scores and byte fallback
  kBpe,  // "gpt2": byte-level BPE with merges and a regex pre-tokenizer
  kWpm,  // "bert": WordPiece
};

struct GgufVocab {
  GgufVocabKind kind = GgufVocabKind::kSpm;
  std::string model;  // tokenizer.ggml.model
  std::string pre;    // tokenizer.ggml.pre ("" when absent)
  std::string name;   // general.name, for llama.cpp's per-model token attributes
  std::vector<VocabEntry> entries;  // by id
  PieceMap piece_to_id;
  std::vector<std::pair<std::string, std::string>> merges;  // BPE, by rank

  std::optional<TokenId> bos_id, eos_id, unk_id, sep_id, pad_id;
  bool add_bos = false;
  bool add_eos = false;
  bool add_sep = false;
  bool add_space_prefix = false;  // SPM: prepend ' ' to the text (and after special tokens)
  bool ignore_merges = false;     // BPE: a word that is a piece is taken whole (Llama 3)
};

// Reads tokenizer.ggml.* from an opened file. Errors start with the file's name and say
// which key is wrong and how.
Result<GgufVocab> read_gguf_vocab(const GgufFile& file);

}  // namespace tessera::tokenizer
