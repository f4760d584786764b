#include "structured/structured_outputs.h"

#include <dlpack/dlpack.h>
#include <xgrammar/xgrammar.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include <nlohmann/json.hpp>

#include "structured/json_schema_check.h"

namespace tessera::structured {

class CompiledGrammar {
 public:
  explicit CompiledGrammar(xgrammar::CompiledGrammar g) : g_(std::move(g)) {}
  const xgrammar::CompiledGrammar& get() const { return g_; }

 private:
  xgrammar::CompiledGrammar g_;
};

namespace {

// The vocabulary as xgrammar reads it: each id's stored piece and how pieces encode bytes.
// Byte-level BPE pieces spell bytes as GPT-2's printable characters ("Ġ" = space);
// SentencePiece pieces use "▁" for spaces and <0xNN> for raw bytes. Special tokens are
// given as empty pieces, which xgrammar never allows inside an output (only the stop tokens,
// at its end).
xgrammar::TokenizerInfo tokenizer_info(const tokenizer::Tokenizer& tok, int64_t vocab,
                                       const std::vector<int32_t>& stop_token_ids) {
  const int64_t n = static_cast<int64_t>(tok.vocab_size());
  std::vector<std::string> pieces(static_cast<size_t>(n));
  int64_t byte_level = 0, byte_fallback = 0;
  for (int64_t id = 0; id < n; ++id) {
    const auto t = static_cast<tokenizer::TokenId>(id);
    if (tok.is_special(t)) continue;
    std::string p = tok.id_to_token(t).value_or("");
    if (p.find("\xC4\xA0") != std::string::npos || p.find("\xC4\x8A") != std::string::npos) ++byte_level;  // Ġ Ċ
    if (p.size() == 6 && p.rfind("<0x", 0) == 0 && p.back() == '>') ++byte_fallback;
    pieces[static_cast<size_t>(id)] = std::move(p);
  }
  const xgrammar::VocabType type = byte_level > byte_fallback ? xgrammar::VocabType::BYTE_LEVEL
                                   : byte_fallback > 0       ? xgrammar::VocabType::BYTE_FALLBACK
                                                             : xgrammar::VocabType::RAW;
  return xgrammar::TokenizerInfo(pieces, type, static_cast<int>(std::max(vocab, n)), stop_token_ids,
                                 /*add_prefix_space=*/false);
}

std::string quoted_literal(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

class Matcher : public TokenConstraint {
 public:
  Matcher(const xgrammar::CompiledGrammar& g, std::vector<int32_t> stop_token_ids)
      : m_(g, std::move(stop_token_ids)) {}
  void fill_allowed(uint32_t* bitmask, int64_t vocab) override {
    int64_t shape[1] = {(vocab + 31) / 32};
    DLTensor t{};
    t.data = bitmask;
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = 1;
    t.dtype = DLDataType{kDLInt, 32, 1};
    t.shape = shape;
    m_.FillNextTokenBitmask(&t);
  }
  bool accept(int32_t token) override { return m_.AcceptToken(token); }
  bool is_terminated() const override { return m_.IsTerminated(); }

 private:
  xgrammar::GrammarMatcher m_;
};

}  // namespace

struct StructuredOutputs::Engine {
  xgrammar::TokenizerInfo info;
  xgrammar::GrammarCompiler compiler;
  // A grammar's masks are precomputed per automaton state, in parallel: long-length strings
  // unrolled into many states compile in a fraction of the time on a many-core server.
  Engine(xgrammar::TokenizerInfo i)
      : info(std::move(i)),
        compiler(info, /*max_threads=*/static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 2u, 8u))) {}
};

StructuredOutputs::StructuredOutputs(const tokenizer::Tokenizer& tok, int64_t vocab,
                                     std::vector<int32_t> stop_token_ids)
    : tok_(tok), vocab_(vocab), stop_token_ids_(std::move(stop_token_ids)) {}

StructuredOutputs::~StructuredOutputs() = default;

StructuredOutputs::Engine& StructuredOutputs::engine() {
  std::call_once(once_, [this] { engine_ = std::make_unique<Engine>(tokenizer_info(tok_, vocab_, stop_token_ids_)); });
  return *engine_;
}

std::string choice_grammar(const std::vector<std::string>& choices) {
  std::string g = "root ::= ";
  for (size_t i = 0; i < choices.size(); ++i) g += (i ? " | " : "") + quoted_literal(choices[i]);
  return g;
}

namespace {

// The largest constraint texts: xgrammar's compile time grows faster than their size (a
// 160 KB enum takes 10 s), and the server compiles before it answers.
constexpr size_t kMaxConstraintBytes = 64 << 10;

std::string too_large(const StructuredOutputsParams& p, const char* field) {
  size_t bytes = 0;
  if (p.json) bytes = p.json->size();
  if (p.regex) bytes = p.regex->size();
  if (p.grammar) bytes = p.grammar->size();
  if (p.choice) {
    for (const std::string& c : *p.choice) bytes += c.size() + 4;
  }
  if (bytes <= kMaxConstraintBytes) return "";
  return std::string("structured_outputs.") + field + " is too large: " + std::to_string(bytes) +
         " bytes, at most " + std::to_string(kMaxConstraintBytes);
}

// Whether a matcher at the start allows any token: a grammar with no finite sentence (root ::=
// root) allows none, and would leave the sampler nothing to draw.
bool allows_a_start(const xgrammar::CompiledGrammar& g, int64_t vocab, const std::vector<int32_t>& stop_token_ids) {
  Matcher m(g, stop_token_ids);
  std::vector<uint32_t> bits(static_cast<size_t>((vocab + 31) / 32));
  m.fill_allowed(bits.data(), vocab);
  return std::any_of(bits.begin(), bits.end(), [](uint32_t w) { return w != 0; });
}

// The cache key of a constraint: its kind, text and options.
std::string cache_key(const StructuredOutputsParams& p) {
  std::string key = p.disable_any_whitespace ? "c" : "w";
  if (p.json) key += "j" + *p.json;
  if (p.regex) key += "r" + *p.regex;
  if (p.grammar) key += "g" + *p.grammar;
  if (p.json_object) key += "o";
  if (p.choice) {
    key += "c";
    for (const std::string& c : *p.choice) key += std::to_string(c.size()) + ":" + c;
  }
  return key;
}

}  // namespace

Result<std::shared_ptr<const CompiledGrammar>> StructuredOutputs::compile(const StructuredOutputsParams& p) {
  const char* field = p.json ? "json" : p.regex ? "regex" : p.choice ? "choice" : p.grammar ? "grammar" : "json_object";
  if (std::string e = too_large(p, field); !e.empty()) return Status::error(e);
  // The server validates (compiles) on its workers, and the engine thread asks again when it
  // adds the request: the second ask finds the grammar here, with no parsing or checks.
  const std::string key = cache_key(p);
  {
    std::lock_guard lock(cache_mu_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  auto compiled = compile_uncached(p, field);
  if (compiled.ok()) {
    std::lock_guard lock(cache_mu_);
    if (cache_.size() >= kCacheEntries) cache_.clear();
    cache_.emplace(key, *compiled);
  }
  return compiled;
}

Result<std::shared_ptr<const CompiledGrammar>> StructuredOutputs::compile_uncached(const StructuredOutputsParams& p,
                                                                                   const char* field) {
  auto checked = [&](xgrammar::CompiledGrammar g) -> Result<std::shared_ptr<const CompiledGrammar>> {
    if (!allows_a_start(g, vocab_, stop_token_ids_)) {
      return Status::error(std::string("structured_outputs.") + field + " admits no output (no finite sentence)");
    }
    return std::make_shared<const CompiledGrammar>(std::move(g));
  };
  try {
    xgrammar::GrammarCompiler& c = engine().compiler;
    const bool any_whitespace = !p.disable_any_whitespace;
    if (p.json) {
      // Ordered: the schema's property order is the output's (as vLLM keeps it).
      const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(*p.json, nullptr, /*allow_exceptions=*/false);
      if (schema.is_discarded()) return Status::error("structured_outputs.json: the schema is not valid JSON");
      if (!schema.is_object() && !schema.is_boolean()) {
        return Status::error("structured_outputs.json: a JSON Schema is an object (or a boolean)");
      }
      if (std::string e = unsupported_schema_keyword(schema); !e.empty()) {
        return Status::error("structured_outputs.json: " + e);
      }
      return checked(c.CompileJSONSchema(enforceable_schema(schema).dump(), any_whitespace));
    }
    if (p.json_object) {
      return checked(c.CompileJSONSchema(R"({"type": "object"})", any_whitespace));
    }
    if (p.regex) return checked(c.CompileRegex(dot_excludes_line_breaks(*p.regex)));
    if (p.choice) return checked(c.CompileGrammar(choice_grammar(*p.choice), "root"));
    if (p.grammar) return checked(c.CompileGrammar(*p.grammar, "root"));
  } catch (const std::exception& e) {
    return Status::error(std::string("structured_outputs.") + field + ": " + e.what());
  }
  return Status::error("structured_outputs: one of json, regex, choice, grammar or json_object is required");
}

std::unique_ptr<TokenConstraint> StructuredOutputs::matcher(const CompiledGrammar& g) const {
  return std::make_unique<Matcher>(g.get(), stop_token_ids_);
}

}  // namespace tessera::structured
