// libFuzzer target: HfTokenizer::from_json on arbitrary bytes must fail cleanly or give a
// tokenizer whose encode/decode fail cleanly or return ids inside the vocabulary.
// The input is split at the first 0xFF byte: a tokenizer.json, then text to encode (with
// fuzz/corpus/fuzz_tokenizer_json seeds holding small valid files to mutate from).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tokenizer/hf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t cut = all.find('\xff');
  const std::string_view json = all.substr(0, cut);
  const std::string_view text =
      cut == std::string_view::npos ? std::string_view("Hello world! 123 <s>\n\t  x") : all.substr(cut + 1);
  auto tok = tessera::tokenizer::HfTokenizer::from_json(json);
  if (!tok.ok()) return 0;
  const auto& t = **tok;
  for (bool special : {false, true}) {
    auto ids = t.encode(text, special);
    if (!ids.ok()) continue;
    for (auto id : *ids) {
      if (id < 0 || static_cast<size_t>(id) >= t.vocab_size()) {
        // Template ids may name ids past the vocab (HF allows it); everything else may not.
        if (!special) __builtin_trap();
      }
    }
    auto text_out = t.decode(*ids, false);
    (void)text_out;
    auto skipped = t.decode(*ids, true);
    (void)skipped;
  }
  (void)t.id_to_token(0);
  (void)t.token_to_id(text);
  return 0;
}
