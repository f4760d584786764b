#include "tokenizer/regex_splitter.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>

namespace tessera::tokenizer {

struct RegexSplitter::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

namespace {

// Unicode White_Space: TAB..CR, SPACE, NEL and the Z categories.
constexpr std::string_view kWhiteSpaceItems = "\\t-\\r\\x{20}\\x{85}\\p{Z}";

std::string pcre2_error(int code) {
  std::array<PCRE2_UCHAR, 256> buf{};
  pcre2_get_error_message(code, buf.data(), buf.size());
  return reinterpret_cast<const char*>(buf.data());
}

struct MatchData {
  pcre2_match_data* md;
  explicit MatchData(const pcre2_code* code) : md(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(md); }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
};

}  // namespace

std::string expand_whitespace_classes(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 32);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[i + 1];
      if (n == 's') {
        if (in_class) {
          out.append(kWhiteSpaceItems);
        } else {
          out.append("[").append(kWhiteSpaceItems).append("]");
        }
      } else if (n == 'S' && !in_class) {
        out.append("[^").append(kWhiteSpaceItems).append("]");
      } else {
        out.push_back(c);
        out.push_back(n);
      }
      ++i;
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out.push_back(c);
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
      if (i + 1 < p.size() && p[i + 1] == ']') out.push_back(p[++i]);
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out.push_back(c);
  }
  return out;
}

Result<RegexSplitter> RegexSplitter::compile(const std::vector<std::string>& patterns) {
  RegexSplitter s;
  for (const std::string& raw : patterns) {
    const std::string pattern = expand_whitespace_classes(raw);
    int err = 0;
    PCRE2_SIZE err_off = 0;
    auto code = std::make_shared<Code>();
    code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                               PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY | PCRE2_NO_UTF_CHECK,
                               &err, &err_off, nullptr);
    if (code->code == nullptr) {
      return Status::error("pre-tokenizer regex /" + raw + "/: " + pcre2_error(err) + " at offset " +
                           std::to_string(err_off));
    }
    code->jit = pcre2_jit_compile(code->code, PCRE2_JIT_COMPLETE) == 0;
    s.codes_.push_back(std::move(code));
  }
  return s;
}

Result<std::vector<std::string_view>> RegexSplitter::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (!text.empty()) pieces.push_back(text);
  std::vector<std::string_view> next;
  for (const auto& code : codes_) {
    MatchData md(code->code);
    if (md.md == nullptr) return Status::error("pre-tokenizer: out of memory");
    next.clear();
    next.reserve(pieces.size() * 2);
    for (std::string_view piece : pieces) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t start = 0;     // where the next search begins
      size_t emitted = 0;   // end of the last emitted piece
      while (start <= piece.size()) {
        // Input was validated once by the caller; skip PCRE2's per-call UTF check.
        int rc = pcre2_match(code->code, subject, piece.size(), start, PCRE2_NO_UTF_CHECK, md.md,
                             nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
          rc = pcre2_match(code->code, subject, piece.size(), start,
                           PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md.md, nullptr);
        }
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) return Status::error("pre-tokenizer regex failed: " + pcre2_error(rc));
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.md);
        const size_t m_begin = ov[0], m_end = ov[1];
        if (m_end == m_begin) {
          // Empty match: no piece; step one character forward.
          if (m_begin >= piece.size()) break;
          size_t step = 1;
          while (m_begin + step < piece.size() &&
                 (static_cast<uint8_t>(piece[m_begin + step]) & 0xC0) == 0x80) {
            ++step;
          }
          start = m_begin + step;
          continue;
        }
        if (m_begin > emitted) next.push_back(piece.substr(emitted, m_begin - emitted));
        next.push_back(piece.substr(m_begin, m_end - m_begin));
        emitted = m_end;
        start = m_end;
      }
      if (emitted < piece.size()) next.push_back(piece.substr(emitted));
    }
    pieces.swap(next);
  }
  return pieces;
}

namespace {

// GPT-2's pattern, and variants of it, as llama.cpp writes them (the (?i:...) contractions
// spelled out in ASCII so that e.g. U+017F never matches 's').
constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr const char* kContractions = R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))";
constexpr const char* kLlama3Tail =
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Tail =
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kUpperWord = R"([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])";
constexpr const char* kLowerWord = R"([\p{Ll}\p{Lm}\p{Lo}\p{M}])";

std::string cased_words(const std::string& suffix) {
  const std::string u = kUpperWord, l = kLowerWord, lead = R"([^\r\n\p{L}\p{N}]?)";
  return lead + u + "*" + l + "+" + suffix + "|" + lead + u + "+" + l + "*" + suffix;
}

// deepseek-llm's letter class, from its tokenizer.json (escaped: several of its code points
// have canonical singleton decompositions that editors silently normalize).
constexpr const char* kDeepseekLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";

bool is_one_of(std::string_view pre, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), pre) != names.end();
}

}  // namespace

Result<std::vector<std::string>> pre_tokenizer_patterns(std::string_view pre) {
  const std::string contractions = kContractions;
  if (pre.empty() || pre == "default") {
    return std::vector<std::string>{R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"};
  }
  if (is_one_of(pre, {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
                      "lfm2", "dbrx", "smaug-bpe", "glm4", "chatglm-bpe"})) {
    return std::vector<std::string>{contractions + kLlama3Tail};
  }
  if (is_one_of(pre, {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "hunyuan",
                      "solar-open", "megrez", "grok-2"})) {
    return std::vector<std::string>{contractions + kQwen2Tail};
  }
  if (pre == "deepseek-llm") {
    return std::vector<std::string>{"[\r\n]", kDeepseekLetters, R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
                                    R"(\s+$)", R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)", R"(\p{N}+)"};
  }
  if (pre == "deepseek-coder") {
    return std::vector<std::string>{"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)",
                                    R"(\p{N})"};
  }
  if (is_one_of(pre, {"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"})) {
    return std::vector<std::string>{
        R"(\p{N}{1,3})", R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
        R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
  }
  if (pre == "falcon") {
    return std::vector<std::string>{R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"};
  }
  if (is_one_of(pre, {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone",
                      "minerva-7b", "mellum2"})) {
    return std::vector<std::string>{R"(\p{N})", kGpt2};
  }
  if (is_one_of(pre, {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de",
                      "a.x-4.0", "mellum", "modern-bert", "mpt", "olmo", "jais", "trillion",
                      "granite-docling", "exaone4", "jina-v1-en", "jina-v2-code", "roberta-bpe"})) {
    return std::vector<std::string>{kGpt2};
  }
  if (is_one_of(pre, {"poro-chat", "bloom", "gpt3-finnish"})) {
    return std::vector<std::string>{R"( ?[^(\s|.,!?…。，、।۔،)]+)"};
  }
  if (pre == "viking") {
    return std::vector<std::string>{R"( ?[^(\s|.,!?…。，、।۔،)]+)", R"(\p{N})"};
  }
  if (pre == "tekken") {
    return std::vector<std::string>{
        cased_words("") + R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
  }
  if (is_one_of(pre, {"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"})) {
    return std::vector<std::string>{cased_words(contractions + "?") +
                                    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
  }
  if (pre == "chameleon") {
    return std::vector<std::string>{"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
                                    R"(([\t\n]|    |  ))", R"(\p{N})", R"([\p{P}!-/:-@\[-`{-~])", kGpt2};
  }
  if (is_one_of(pre, {"bailingmoe", "bailingmoe2", "llada-moe"})) {
    return std::vector<std::string>{
        R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"};
  }
  if (pre == "seed-coder") {
    return std::vector<std::string>{
        contractions +
        R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"};
  }
  return Status::error("unknown pre-tokenizer type '" + std::string(pre) + "'");
}

}  // namespace tessera::tokenizer
