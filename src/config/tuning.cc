#include "tessera/tuning.h"

#include <charconv>
#include <cstdlib>
#include <functional>
#include <string_view>
#include <vector>

namespace tessera {
namespace {

// One switch: its documentation and how its value lands in Tuning.
struct Entry {
  TuningSwitch doc;
  std::function<Status(std::string_view, Tuning&)> apply;
};

Result<int64_t> parse_int(std::string_view name, std::string_view text, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) {
    return Status::error(std::string(name) + "=" + std::string(text) + ": expected an integer in [" +
                         std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

Result<bool> parse_bool(std::string_view name, std::string_view text) {
  if (text == "1" || text == "true") return true;
  if (text == "0" || text == "false") return false;
  return Status::error(std::string(name) + "=" + std::string(text) + ": expected 0 or 1");
}

template <typename T>
std::function<Status(std::string_view, Tuning&)> int_field(const char* name, T Tuning::*field, int64_t lo,
                                                           int64_t hi) {
  return [=](std::string_view text, Tuning& t) -> Status {
    auto v = parse_int(name, text, lo, hi);
    if (!v.ok()) return v.status();
    t.*field = static_cast<T>(*v);
    return Status::ok_status();
  };
}

std::function<Status(std::string_view, Tuning&)> bool_field(const char* name, bool Tuning::*field) {
  return [=](std::string_view text, Tuning& t) -> Status {
    auto v = parse_bool(name, text);
    if (!v.ok()) return v.status();
    t.*field = *v;
    return Status::ok_status();
  };
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = [] {
    std::vector<Entry> e;
    const auto add = [&e](const char* env, const char* def, const char* doc, auto apply) {
      e.push_back(Entry{TuningSwitch{env, def, doc}, apply});
    };
    add("TESSERA_ATTN_SPLIT_KEYS", "64",
        "Split-KV decode attention: at most one split per this many visible keys of a token.",
        int_field("TESSERA_ATTN_SPLIT_KEYS", &Tuning::attention_split_keys, 1, 1 << 20));
    add("TESSERA_ROPE_IN_ATTENTION", "1",
        "Decode attention applies RoPE and writes the KV cache itself (0: a separate kernel first).",
        bool_field("TESSERA_ROPE_IN_ATTENTION", &Tuning::rope_in_attention));
    add("TESSERA_PREFILL_ROWS", "0",
        "Query rows (token x head) per prefill attention tile: 64 or 128; 0 chooses per step.",
        [](std::string_view text, Tuning& t) -> Status {
          auto v = parse_int("TESSERA_PREFILL_ROWS", text, 0, 128);
          if (!v.ok()) return v.status();
          if (*v != 0 && *v != 64 && *v != 128) return Status::error("TESSERA_PREFILL_ROWS must be 0, 64 or 128");
          t.prefill_tile_rows = static_cast<int>(*v);
          return Status::ok_status();
        });
    add("TESSERA_DECODE_BULK_TOKENS", "8",
        "Decode steps of at most this many tokens run the MLP and LM head as bulk GEMVs (0: never).",
        int_field("TESSERA_DECODE_BULK_TOKENS", &Tuning::decode_bulk_tokens, 0, 16));
    add("TESSERA_GEMM_TUNE", "16",
        "cuBLASLt algorithm tuning at start-up for GEMM shapes of up to N rows (0: none; at most 512).",
        int_field("TESSERA_GEMM_TUNE", &Tuning::gemm_tune_rows, 0, 512));
    add("TESSERA_CUDA_WARMUP", "1",
        "Run one step of every decode batch size at start-up, capturing the CUDA graphs before any request.",
        bool_field("TESSERA_CUDA_WARMUP", &Tuning::cuda_warmup));
    return e;
  }();
  return table;
}

}  // namespace

std::span<const TuningSwitch> tuning_switches() {
  static const std::vector<TuningSwitch> docs = [] {
    std::vector<TuningSwitch> d;
    for (const Entry& e : entries()) d.push_back(e.doc);
    return d;
  }();
  return docs;
}

Result<Tuning> tuning_from_environment() {
  Tuning t;
  for (const Entry& e : entries()) {
    const char* value = std::getenv(e.doc.env);
    if (value == nullptr || *value == '\0') continue;
    if (Status s = e.apply(value, t); !s.ok()) return s;
  }
  return t;
}

Result<Profiling> parse_profiling(const std::string& spec) {
  Profiling p;
  std::string_view rest = spec;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item == "engine") {
      p.engine = true;
    } else if (item == "cuda") {
      p.cuda = true;
    } else if (item == "ops") {
      p.cuda = p.ops = true;
    } else if (!item.empty()) {
      return Status::error("--profile: unknown '" + std::string(item) + "' (engine, cuda, ops, comma-separated)");
    }
  }
  return p;
}

}  // namespace tessera
