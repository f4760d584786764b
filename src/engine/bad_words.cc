#include "engine/bad_words.h"

#include <algorithm>
#include <string>
#include <vector>

namespace tessera {

Status resolve_bad_words(SamplingParams* p, const tokenizer::Tokenizer& tok) {
  for (const std::string& word : p->bad_words) {
    const size_t start = word.find_first_not_of(" \t\n\r");
    if (start == std::string::npos) return Status::error("bad_words must not be empty or blank");
    const std::string bare = word.substr(start);
    auto alone = tok.encode(bare, /*add_special_tokens=*/false);
    if (!alone.ok()) return Status::error("bad_words: " + alone.error());
    if (alone->empty()) continue;
    auto inside = tok.encode(" " + bare, /*add_special_tokens=*/false);
    if (!inside.ok()) return Status::error("bad_words: " + inside.error());
    auto add = [&](std::vector<int32_t> ids) {
      auto& all = p->bad_words_token_ids;
      if (std::find(all.begin(), all.end(), ids) == all.end()) all.push_back(std::move(ids));
    };
    const std::vector<int32_t> alone_ids = *alone;
    add(std::move(*alone));
    if (inside->size() == alone_ids.size() && inside->front() != alone_ids.front()) add(std::move(*inside));
  }
  p->bad_words.clear();
  return Status();
}

}  // namespace tessera
