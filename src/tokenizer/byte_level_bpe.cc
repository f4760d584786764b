#include "tokenizer/byte_level_bpe.h"

#include <queue>

#include "tokenizer/utf8.h"

namespace tessera::tokenizer {

Result<ByteLevelBpe> ByteLevelBpe::build(const PieceMap& piece_to_id,
                                         const std::vector<std::pair<std::string, std::string>>& merges) {
  ByteLevelBpe bpe;
  bpe.piece_to_id_ = &piece_to_id;
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    utf8_append(ch, byte_to_unicode(static_cast<uint8_t>(b)));
    bpe.byte_ids_[static_cast<size_t>(b)] = find_piece(piece_to_id, ch).value_or(-1);
  }
  bpe.merges_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& [l, r] = merges[i];
    const auto lid = find_piece(piece_to_id, l);
    const auto rid = find_piece(piece_to_id, r);
    const auto mid = find_piece(piece_to_id, l + r);
    if (!lid || !rid || !mid) {
      const std::string& missing = !lid ? l : !rid ? r : l + r;
      return Status::error("merge " + std::to_string(i) + " '" + l + " " + r + "' refers to '" + missing +
                           "', which is not in the vocabulary");
    }
    // The first (lowest-rank) occurrence of a pair wins, as in HF.
    bpe.merges_.emplace(key(*lid, *rid), Merge{static_cast<int32_t>(i), *mid});
  }
  return bpe;
}

void ByteLevelBpe::encode_word(std::string_view word, bool ignore_merges, std::vector<TokenId>& out) const {
  if (word.empty()) return;
  if (ignore_merges) {
    if (auto id = find_piece(*piece_to_id_, byte_level_encode(word))) {
      out.push_back(*id);
      return;
    }
  }
  struct Symbol {
    TokenId id;  // -1: byte without a token (never merges, emits nothing)
    int prev, next;
    bool alive;
  };
  struct Pair {
    int32_t rank;
    int left;
    TokenId left_id, right_id, merged;
  };
  struct Greater {
    bool operator()(const Pair& a, const Pair& b) const {
      return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
  };
  const int n = static_cast<int>(word.size());
  std::vector<Symbol> sym(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    sym[static_cast<size_t>(i)] = {byte_ids_[static_cast<uint8_t>(word[static_cast<size_t>(i)])], i - 1,
                                   i + 1 < n ? i + 1 : -1, true};
  }
  std::priority_queue<Pair, std::vector<Pair>, Greater> queue;
  auto try_add = [&](int left) {
    if (left < 0) return;
    const Symbol& l = sym[static_cast<size_t>(left)];
    if (l.next < 0) return;
    const Symbol& r = sym[static_cast<size_t>(l.next)];
    if (l.id < 0 || r.id < 0) return;
    auto it = merges_.find(key(l.id, r.id));
    if (it != merges_.end()) queue.push({it->second.rank, left, l.id, r.id, it->second.merged});
  };
  for (int i = 0; i + 1 < n; ++i) try_add(i);

  while (!queue.empty()) {
    const Pair p = queue.top();
    queue.pop();
    Symbol& l = sym[static_cast<size_t>(p.left)];
    if (!l.alive || l.id != p.left_id || l.next < 0) continue;
    Symbol& r = sym[static_cast<size_t>(l.next)];
    if (r.id != p.right_id) continue;
    l.id = p.merged;
    r.alive = false;
    l.next = r.next;
    if (r.next >= 0) sym[static_cast<size_t>(r.next)].prev = p.left;
    try_add(l.prev);
    try_add(p.left);
  }
  for (int i = 0; i != -1; i = sym[static_cast<size_t>(i)].next) {
    if (sym[static_cast<size_t>(i)].id >= 0) out.push_back(sym[static_cast<size_t>(i)].id);
  }
}

}  // namespace tessera::tokenizer
