// Jinja2 lexer with HF's environment settings: trim_blocks and lstrip_blocks on,
// keep_trailing_newline off, newlines normalised to "\n". Comments disappear here and
// `{% raw %}` bodies become plain data, so the parser sees data, tags and expression tokens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja/value.h"

namespace tessera::jinja {

enum class Tok : uint8_t {
  kData,        // literal template text
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,
  kInt,
  kFloat,
  kOp,  // operator or punctuation; text in `text`
  kEof,
};

struct Token {
  Tok type = Tok::kEof;
  std::string text;  // data, name, decoded string, operator
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
  int col = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws Error (with line and column) on malformed input.
std::vector<Token> lex(std::string_view source, const LexOptions& options = {});

}  // namespace tessera::jinja
