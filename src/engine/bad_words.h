// SamplingParams::bad_words as token sequences (bad_words_token_ids), as vLLM reads them:
// each word, leading blanks dropped, tokenized alone, and after a space when that spells it
// with as many tokens starting with another one (byte-level BPE: "little" and "Ġlittle").
// SentencePiece vocabularies already spell a word alone as inside a text ("▁little"; after
// a space "▁", "▁little"), so one sequence covers both there.
#pragma once

#include "common/status.h"
#include "tessera/sampling_params.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

// Appends the words' sequences to p->bad_words_token_ids and clears p->bad_words (so a
// second call adds nothing). Fails on text the tokenizer refuses.
Status resolve_bad_words(SamplingParams* p, const tokenizer::Tokenizer& tok);

}  // namespace tessera
