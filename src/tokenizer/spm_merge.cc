#include "tokenizer/spm_merge.h"

#include <cstdio>
#include <queue>

#include "tokenizer/utf8.h"

namespace tessera::tokenizer {

SpmMerger::SpmMerger(std::span<const VocabEntry> vocab, const PieceMap& piece_to_id,
                     std::optional<TokenId> unk_id)
    : vocab_(vocab), piece_to_id_(&piece_to_id), unk_id_(unk_id) {
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    auto id = find_piece(piece_to_id, hex);
    if (!id) id = find_piece(piece_to_id, std::string_view(reinterpret_cast<const char*>(&b), 1));
    byte_ids_[static_cast<size_t>(b)] = id.value_or(-1);
  }
}

void SpmMerger::emit_bytes(std::string_view piece, std::vector<TokenId>& out) const {
  for (char c : piece) {
    const TokenId id = byte_ids_[static_cast<uint8_t>(c)];
    if (id >= 0) {
      out.push_back(id);
    } else if (unk_id_) {
      out.push_back(*unk_id_);
    }
  }
}

void SpmMerger::encode(std::string_view text, std::vector<TokenId>& out) const {
  struct Symbol {
    int prev, next;
    size_t begin, len;  // bytes of text; len 0 once merged into its left neighbour
  };
  struct Bigram {
    int left, right;
    float score;
    size_t len;
  };
  struct Lower {
    bool operator()(const Bigram& a, const Bigram& b) const {
      return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
  };

  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = std::min(utf8_lead_len(static_cast<uint8_t>(text[pos])), text.size() - pos);
    const int idx = static_cast<int>(symbols.size());
    symbols.push_back({idx - 1, pos + len == text.size() ? -1 : idx + 1, pos, len});
    pos += len;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, Lower> queue;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const Symbol& r = symbols[static_cast<size_t>(right)];
    const auto id = find_piece(*piece_to_id_, text.substr(l.begin, l.len + r.len));
    if (!id) return;
    queue.push({left, right, vocab_[static_cast<size_t>(*id)].score, l.len + r.len});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[static_cast<size_t>(b.left)];
    Symbol& r = symbols[static_cast<size_t>(b.right)];
    // Stale: one side was merged away or grew since this pair was queued.
    if (l.len == 0 || r.len == 0 || l.len + r.len != b.len) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
    const Symbol& s = symbols[static_cast<size_t>(i)];
    const std::string_view piece = text.substr(s.begin, s.len);
    if (auto id = find_piece(*piece_to_id_, piece)) {
      out.push_back(*id);
    } else {
      emit_bytes(piece, out);
    }
  }
}

}  // namespace tessera::tokenizer
