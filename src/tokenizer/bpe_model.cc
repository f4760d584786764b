#include "tokenizer/bpe_model.h"

#include <atomic>
#include <cstdio>
#include <queue>

#include "tokenizer/json_fields.h"
#include "tokenizer/pre_tokenizers.h"
#include "tokenizer/unicode.h"

namespace tessera::tokenizer {
namespace {

namespace jf = json_fields;

constexpr int32_t kMaxTokenId = (1 << 24) - 1;  // bounds the id table a hostile file can ask for
constexpr size_t kSmallWord = 48;               // linear merge scan up to here, a heap above
constexpr size_t kCacheSlots = 1 << 14;
constexpr size_t kMaxCachedBytes = 64;

std::atomic<uint64_t> g_next_serial{1};

// Direct-mapped, per-thread: no locks, bounded memory; a miss just recomputes.
struct WordCache {
  struct Entry {
    uint64_t hash = 0;
    uint64_t serial = 0;
    std::string key;
    std::vector<TokenId> ids;
  };
  std::vector<Entry> entries = std::vector<Entry>(kCacheSlots);
};

WordCache& word_cache() {
  thread_local WordCache cache;
  return cache;
}

}  // namespace

struct BpeModel::Symbols {
  std::vector<int32_t> ids;
  std::optional<int32_t> pending_unk;  // HF's fused-unk accumulator
  Status error;
};

Result<std::unique_ptr<BpeModel>> BpeModel::load(TokenizerJson* doc, const nlohmann::json& model) {
  const char* w = "model BPE";
  std::unique_ptr<BpeModel> m(new BpeModel());
  if (model.contains("vocab") || !doc->has_vocab) {
    return Status::error("model BPE: field 'vocab' must be an object of token -> id");
  }
  auto unk = jf::get_opt_string(model, "unk_token", w);
  auto prefix = jf::get_opt_string(model, "continuing_subword_prefix", w);
  auto suffix = jf::get_opt_string(model, "end_of_word_suffix", w);
  auto byte_fallback = jf::get_bool(model, "byte_fallback", false, w);
  auto fuse_unk = jf::get_bool(model, "fuse_unk", false, w);
  auto ignore_merges = jf::get_bool(model, "ignore_merges", false, w);
  for (const Status* s : {&unk.status(), &prefix.status(), &suffix.status(),
                          &byte_fallback.status(), &fuse_unk.status(), &ignore_merges.status()}) {
    if (!s->ok()) return *s;
  }
  if (model.contains("dropout") && !model["dropout"].is_null() && !model["dropout"].is_number()) {
    return Status::error("model BPE: field 'dropout' must be a number or null");
  }
  m->unk_token_ = *unk;
  m->prefix_ = prefix->value_or("");
  m->suffix_ = suffix->value_or("");
  m->byte_fallback_ = *byte_fallback;
  m->fuse_unk_ = *fuse_unk;
  m->ignore_merges_ = *ignore_merges;
  m->serial_ = g_next_serial.fetch_add(1);

  m->pool_ = std::move(doc->pool);  // spans stay valid: same bytes, new owner
  const std::string_view pool(m->pool_);
  int64_t max_id = -1;
  for (const auto& e : doc->vocab) {
    if (e.id > kMaxTokenId) {
      return Status::error("model BPE: token id " + std::to_string(e.id) + " is too large");
    }
    max_id = std::max(max_id, e.id);
  }
  m->vocab_.reserve(doc->vocab.size());
  m->by_id_.assign(static_cast<size_t>(max_id + 1), IdSpan{});
  for (const auto& e : doc->vocab) {
    const std::string_view tok = pool.substr(e.token.offset, e.token.length);
    m->vocab_.insert(tok, static_cast<int32_t>(e.id));
    m->by_id_[static_cast<size_t>(e.id)] = IdSpan{e.token.offset, static_cast<int32_t>(e.token.length)};
  }
  m->num_entries_ = m->vocab_.size();

  if (!doc->has_merges && model.contains("merges") && !model["merges"].is_null()) {
    return Status::error("model BPE: field 'merges' must be an array");
  }
  m->merges_.reserve(doc->merges.size());
  // Merges resolve in batches with prefetching: three random lookups per merge into a
  // table of several MB are most of the load time otherwise.
  constexpr size_t kBatch = 32;
  std::string joined[kBatch];
  uint64_t ha[kBatch], hb[kBatch], hj[kBatch];
  int32_t a_id[kBatch], b_id[kBatch];
  const StringIdMap& vocab = m->vocab_;
  for (size_t base = 0; base < doc->merges.size(); base += kBatch) {
    const size_t n = std::min(kBatch, doc->merges.size() - base);
    auto span = [&](TokenizerJson::Span sp) { return pool.substr(sp.offset, sp.length); };
    auto left = [&](size_t i) { return span(doc->merges[base + i].left); };
    auto right = [&](size_t i) { return span(doc->merges[base + i].right); };
    for (size_t i = 0; i < n; ++i) {
      ha[i] = hash_bytes(left(i));
      hb[i] = hash_bytes(right(i));
      vocab.prefetch_slot(ha[i]);
      vocab.prefetch_slot(hb[i]);
    }
    for (size_t i = 0; i < n; ++i) {
      vocab.prefetch_key(ha[i]);
      vocab.prefetch_key(hb[i]);
    }
    for (size_t i = 0; i < n; ++i) {
      a_id[i] = vocab.find_hashed(left(i), ha[i]);
      b_id[i] = vocab.find_hashed(right(i), hb[i]);
      if (a_id[i] < 0 || b_id[i] < 0) {
        return Status::error("model BPE: merge " + std::to_string(base + i) +
                             " uses a token missing from the vocab ('" +
                             std::string(a_id[i] < 0 ? left(i) : right(i)) + "')");
      }
      // With a continuing_subword_prefix the right part's prefix is dropped when joining.
      std::string_view b_rest = right(i);
      if (!m->prefix_.empty() && b_rest.substr(0, m->prefix_.size()) == m->prefix_) {
        b_rest = b_rest.substr(m->prefix_.size());
      }
      joined[i].assign(left(i));
      joined[i].append(b_rest);
      hj[i] = hash_bytes(joined[i]);
      vocab.prefetch_slot(hj[i]);
    }
    for (size_t i = 0; i < n; ++i) vocab.prefetch_key(hj[i]);
    for (size_t i = 0; i < n; ++i) {
      const int32_t new_id = vocab.find_hashed(joined[i], hj[i]);
      if (new_id < 0) {
        return Status::error("model BPE: merge " + std::to_string(base + i) + " makes '" +
                             joined[i] + "', which is not in the vocab");
      }
      m->merges_.insert(a_id[i], b_id[i],
                        PairMap::Value{static_cast<int32_t>(base + i), new_id});
    }
  }
  doc->merges.clear();
  doc->vocab.clear();

  char name[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    m->fallback_ids_[b] = m->vocab_.find(name);
    m->raw_unit_ids_[b] = -1;
  }
  return m;
}

bool BpeModel::enable_raw_bytes() {
  if (!prefix_.empty() || !suffix_.empty()) return false;
  struct Key {
    size_t offset;
    size_t length;
    int32_t id;
  };
  std::vector<Key> keys;
  keys.reserve(num_entries_);
  for (size_t id = 0; id < by_id_.size(); ++id) {
    if (by_id_[id].length <= 0) continue;
    const std::string_view tok =
        std::string_view(pool_).substr(by_id_[id].offset, static_cast<size_t>(by_id_[id].length));
    const size_t offset = byte_pool_.size();
    bool ok = true;
    for (size_t pos = 0; pos < tok.size() && ok;) {
      const int b = byte_level_byte(unicode::decode_utf8(tok, &pos));
      ok = b >= 0;
      byte_pool_.push_back(static_cast<char>(b));
    }
    if (!ok) {
      byte_pool_.resize(offset);  // not a ByteLevel token: unreachable from raw bytes
      continue;
    }
    keys.push_back(Key{offset, byte_pool_.size() - offset, static_cast<int32_t>(id)});
  }
  byte_vocab_.reserve(keys.size());
  for (const Key& k : keys) {
    const std::string_view key = std::string_view(byte_pool_).substr(k.offset, k.length);
    // A duplicate id for the same token string keeps the vocab's own choice.
    if (vocab_.find(std::string_view(pool_).substr(by_id_[k.id].offset, by_id_[k.id].length)) == k.id) {
      byte_vocab_.insert(key, k.id);
    }
  }
  for (int b = 0; b < 256; ++b) {
    raw_unit_ids_[b] = vocab_.find(byte_level_char(static_cast<unsigned char>(b)));
  }
  raw_bytes_ = true;
  return true;
}

std::optional<TokenId> BpeModel::token_to_id(std::string_view token) const {
  const int32_t id = vocab_.find(token);
  return id < 0 ? std::nullopt : std::optional<TokenId>(id);
}

std::optional<std::string_view> BpeModel::id_to_token(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= by_id_.size() || by_id_[id].length < 0) return std::nullopt;
  return std::string_view(pool_).substr(by_id_[id].offset, static_cast<size_t>(by_id_[id].length));
}

Status BpeModel::unk_id(int32_t* id) const {
  *id = vocab_.find(*unk_token_);
  if (*id < 0) return Status::error("unk_token '" + *unk_token_ + "' is not in the vocab");
  return Status();
}

// One char (or, in raw mode, one byte) of the word: HF BPE::merge_word's loop body.
void BpeModel::add_unit(std::string_view unit, int32_t id, Symbols* sym) const {
  if (id >= 0) {
    if (sym->pending_unk) {
      sym->ids.push_back(*sym->pending_unk);
      sym->pending_unk.reset();
    }
    sym->ids.push_back(id);
    return;
  }
  if (byte_fallback_) {
    bool all = true;
    for (char c : unit) all = all && fallback_ids_[static_cast<unsigned char>(c)] >= 0;
    if (all) {
      // Note: a pending unk stays pending across byte tokens, exactly as in HF.
      for (char c : unit) sym->ids.push_back(fallback_ids_[static_cast<unsigned char>(c)]);
      return;
    }
  }
  if (!unk_token_) return;  // no unk: HF drops the char
  int32_t unk = -1;
  if (Status st = unk_id(&unk); !st.ok()) {
    sym->error = st;
    return;
  }
  if (sym->pending_unk && fuse_unk_) return;  // fused into the pending one
  if (sym->pending_unk) sym->ids.push_back(*sym->pending_unk);
  sym->pending_unk = unk;
}

Status BpeModel::initial_symbols(std::string_view piece, Symbols* sym) const {
  sym->ids.clear();
  sym->pending_unk.reset();
  sym->error = Status();
  if (raw_bytes_) {
    for (char c : piece) {
      const auto b = static_cast<unsigned char>(c);
      add_unit(byte_level_char(b), raw_unit_ids_[b], sym);
    }
  } else {
    std::string scratch;
    for (size_t pos = 0; pos < piece.size();) {
      const size_t start = pos;
      pos += unicode::utf8_len(static_cast<unsigned char>(piece[pos]));
      if (pos > piece.size()) pos = piece.size();
      std::string_view unit = piece.substr(start, pos - start);
      const bool first = start == 0, last = pos == piece.size();
      if ((!first && !prefix_.empty()) || (last && !suffix_.empty())) {
        scratch.clear();
        if (!first) scratch += prefix_;
        scratch.append(unit);
        if (last) scratch += suffix_;
        unit = scratch;
      }
      add_unit(unit, vocab_.find(unit), sym);
    }
  }
  if (sym->pending_unk) sym->ids.push_back(*sym->pending_unk);
  return sym->error;
}

// Repeatedly merges the lowest-rank adjacent pair, leftmost first: the order HF's heap gives.
void BpeModel::merge(Symbols* sym) const {
  std::vector<int32_t>& ids = sym->ids;
  const size_t n = ids.size();
  if (n < 2) return;
  if (n <= kSmallWord) {
    PairMap::Value pairs[kSmallWord];
    size_t count = n;
    for (size_t i = 0; i + 1 < count; ++i) pairs[i] = merges_.find(ids[i], ids[i + 1]);
    while (count > 1) {
      size_t best = count;
      int32_t best_rank = INT32_MAX;
      for (size_t i = 0; i + 1 < count; ++i) {
        if (pairs[i].id >= 0 && pairs[i].rank < best_rank) {
          best_rank = pairs[i].rank;
          best = i;
        }
      }
      if (best == count) break;
      ids[best] = pairs[best].id;
      for (size_t i = best + 1; i + 1 < count; ++i) ids[i] = ids[i + 1];
      for (size_t i = best + 1; i + 2 < count; ++i) pairs[i] = pairs[i + 1];
      --count;
      if (best > 0) pairs[best - 1] = merges_.find(ids[best - 1], ids[best]);
      if (best + 1 < count) pairs[best] = merges_.find(ids[best], ids[best + 1]);
    }
    ids.resize(count);
    return;
  }
  // Long words: a heap of (rank, position) over a linked list, as HF's Word::merge_all.
  struct Entry {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator>(const Entry& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::vector<int32_t> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  for (size_t i = 0; i + 1 < n; ++i) {
    const PairMap::Value v = merges_.find(ids[i], ids[i + 1]);
    if (v.id >= 0) heap.push(Entry{v.rank, static_cast<int32_t>(i), v.id});
  }
  while (!heap.empty()) {
    const Entry top = heap.top();
    heap.pop();
    if (!alive[top.pos] || next[top.pos] < 0) continue;
    const int32_t right = next[top.pos];
    const PairMap::Value cur = merges_.find(ids[top.pos], ids[right]);
    if (cur.id != top.new_id) continue;  // stale entry
    ids[top.pos] = top.new_id;
    alive[right] = false;
    next[top.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = top.pos;
    if (prev[top.pos] >= 0) {
      const PairMap::Value v = merges_.find(ids[prev[top.pos]], ids[top.pos]);
      if (v.id >= 0) heap.push(Entry{v.rank, prev[top.pos], v.id});
    }
    if (next[top.pos] >= 0) {
      const PairMap::Value v = merges_.find(ids[top.pos], ids[next[top.pos]]);
      if (v.id >= 0) heap.push(Entry{v.rank, top.pos, v.id});
    }
  }
  size_t out = 0;
  for (size_t i = 0; i < n; ++i) {
    if (alive[i]) ids[out++] = ids[i];
  }
  ids.resize(out);
}

Status BpeModel::tokenize(std::string_view piece, std::vector<TokenId>* out) const {
  if (piece.empty()) return Status();
  if (ignore_merges_) {
    const int32_t id = raw_bytes_ ? byte_vocab_.find(piece) : vocab_.find(piece);
    if (id >= 0) {
      out->push_back(id);
      return Status();
    }
  }
  const bool cacheable = piece.size() <= kMaxCachedBytes;
  WordCache::Entry* slot = nullptr;
  uint64_t h = 0;
  if (cacheable) {
    h = hash_bytes(piece) ^ (serial_ * 0x9E3779B97F4A7C15ull);
    slot = &word_cache().entries[h & (kCacheSlots - 1)];
    if (slot->hash == h && slot->serial == serial_ && slot->key == piece) {
      out->insert(out->end(), slot->ids.begin(), slot->ids.end());
      return Status();
    }
  }
  thread_local Symbols sym;
  TESSERA_RETURN_IF_ERROR(initial_symbols(piece, &sym));
  merge(&sym);
  out->insert(out->end(), sym.ids.begin(), sym.ids.end());
  if (slot != nullptr) {
    slot->hash = h;
    slot->serial = serial_;
    slot->key.assign(piece);
    slot->ids.assign(sym.ids.begin(), sym.ids.end());
  }
  return Status();
}

}  // namespace tessera::tokenizer
