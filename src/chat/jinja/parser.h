// Recursive-descent parser for the Jinja2 grammar (the precedence levels and statement
// forms of jinja2/parser.py). Nesting is bounded, so hostile input cannot exhaust the stack.
#pragma once

#include <string_view>

#include "chat/jinja/ast.h"
#include "chat/jinja/lexer.h"

namespace tessera::jinja {

// Expressions, brackets and blocks nest at most this deep.
constexpr int kMaxParseDepth = 100;
// Expression trees are at most this tall (long `a + b + c` or `x|f|g` chains included).
constexpr int kMaxExprHeight = 400;

// Parses a whole template; throws Error with the line and column of the offending token.
// Unknown filters and tests are errors unless they sit inside an `if` or `x if c`, where
// jinja2 defers them to run time.
Body parse_template(std::string_view source);

// Binds filters and tests (resolve.cc); part of parse_template.
void resolve_template(Body& body);

}  // namespace tessera::jinja
