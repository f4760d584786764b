#include "chat/jinja/parser.h"

#include <algorithm>
#include <initializer_list>


namespace tessera::jinja {
namespace {

std::string describe(const Token& t) {
  switch (t.type) {
    case Tok::kData: return "template data";
    case Tok::kVarBegin: return "begin of print statement";
    case Tok::kVarEnd: return "end of print statement";
    case Tok::kBlockBegin: return "begin of statement block";
    case Tok::kBlockEnd: return "end of statement block";
    case Tok::kEof: return "end of template";
    case Tok::kString: return "string";
    case Tok::kInt: return "integer";
    case Tok::kFloat: return "float";
    default: return t.text;
  }
}

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : toks_(std::move(toks)) {}

  Body parse_all() {
    Body body = subparse({});
    if (cur().type != Tok::kEof) fail("unexpected '" + describe(cur()) + "'");
    return body;
  }

 private:
  // Limits the nesting of the recursive calls that follow the template's structure.
  struct DepthGuard {
    explicit DepthGuard(Parser* p) : p_(p) {
      if (++p_->depth_ > kMaxParseDepth) p_->fail("template nests too deeply");
    }
    ~DepthGuard() { --p_->depth_; }
    Parser* p_;
  };

  const Token& cur() const { return toks_[pos_]; }
  const Token& look() const { return toks_[pos_ + 1 < toks_.size() ? pos_ + 1 : pos_]; }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  [[noreturn]] void fail(const std::string& msg) const { throw Error(msg, cur().line, cur().col); }

  bool is_op(std::string_view op) const { return cur().type == Tok::kOp && cur().text == op; }
  bool is_name(std::string_view n) const { return cur().type == Tok::kName && cur().text == n; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) fail("expected '" + std::string(op) + "', got '" + describe(cur()) + "'");
  }
  std::string expect_name() {
    if (cur().type != Tok::kName) fail("expected name, got '" + describe(cur()) + "'");
    return next().text;
  }
  void expect_name(std::string_view n) {
    if (!skip_name(n)) fail("expected '" + std::string(n) + "', got '" + describe(cur()) + "'");
  }
  void expect_block_end() {
    if (cur().type != Tok::kBlockEnd) fail("expected end of statement block, got '" + describe(cur()) + "'");
    next();
  }

  ExprPtr make(ExprKind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->col = at.col;
    return e;
  }
  StmtPtr make_stmt(StmtKind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->col = at.col;
    return s;
  }

  // ---- statements ----

  // Parses until a block tag whose name is in `end` (left as the current token, after
  // the `{%`) or the end of the template.
  Body subparse(std::initializer_list<std::string_view> end) {
    Body body;
    while (cur().type != Tok::kEof) {
      const Token& t = cur();
      if (t.type == Tok::kData) {
        auto s = make_stmt(StmtKind::kOutput, t);
        s->text = next().text;
        body.push_back(std::move(s));
      } else if (t.type == Tok::kVarBegin) {
        next();
        auto s = make_stmt(StmtKind::kPrint, cur());
        s->expr = parse_tuple(true, {}, false);
        if (cur().type != Tok::kVarEnd) fail("expected end of print statement, got '" + describe(cur()) + "'");
        next();
        body.push_back(std::move(s));
      } else if (t.type == Tok::kBlockBegin) {
        next();
        if (cur().type == Tok::kName) {
          for (std::string_view e : end) {
            if (cur().text == e) return body;
          }
        }
        body.push_back(parse_statement());
        expect_block_end();
      } else {
        fail("unexpected '" + describe(t) + "'");
      }
    }
    return body;
  }

  // Header already parsed: `%}`, the body, and the end tag named in `end` (consumed when
  // drop_needle). Returns the body; the end tag's name is left current otherwise.
  Body parse_statements(std::initializer_list<std::string_view> end, bool drop_needle) {
    skip_op(":");
    expect_block_end();
    Body body = subparse(end);
    if (cur().type == Tok::kEof) {
      std::string names;
      for (std::string_view e : end) names += (names.empty() ? "'" : " or '") + std::string(e) + "'";
      fail("Unexpected end of template. Jinja was looking for the following tags: " + names);
    }
    if (drop_needle) next();
    return body;
  }

  StmtPtr parse_statement() {
    DepthGuard guard(this);
    const Token& t = cur();
    if (t.type != Tok::kName) fail("tag name expected");
    const std::string& n = t.text;
    if (n == "for") return parse_for();
    if (n == "if") return parse_if();
    if (n == "set") return parse_set();
    if (n == "macro") return parse_macro();
    if (n == "call") return parse_call_block();
    if (n == "filter") return parse_filter_block();
    if (n == "with") return parse_with();
    if (n == "generation") {
      auto s = make_stmt(StmtKind::kGeneration, next());
      s->body = parse_statements({"endgeneration"}, true);
      return s;
    }
    if (n == "break" || n == "continue") {
      if (loop_depth_ == 0) fail("'" + n + "' outside loop");
      auto s = make_stmt(n == "break" ? StmtKind::kBreak : StmtKind::kContinue, next());
      return s;
    }
    if (n == "block" || n == "extends" || n == "include" || n == "import" || n == "from" ||
        n == "autoescape" || n == "do") {
      fail("tag '" + n + "' is not supported in chat templates");
    }
    fail("Encountered unknown tag '" + n + "'.");
  }

  // A name, or names separated by commas (optionally parenthesized).
  void parse_assign_target(Stmt& s, std::initializer_list<std::string_view> extra_end) {
    bool parens = skip_op("(");
    while (true) {
      s.targets.push_back(expect_name());
      if (!skip_op(",")) break;
      s.tuple_target = true;
      if (cur().type != Tok::kName) break;  // trailing comma
      bool end = false;
      for (std::string_view e : extra_end) end = end || is_name(e);
      if (end) break;
    }
    if (parens) expect_op(")");
    if (parens && s.targets.size() > 1) s.tuple_target = true;
  }

  StmtPtr parse_for() {
    auto s = make_stmt(StmtKind::kFor, next());
    parse_assign_target(*s, {"in"});
    expect_name("in");
    s->expr = parse_tuple(false, {"recursive"}, false);
    if (skip_name("if")) s->cond = parse_expression(true);
    if (is_name("recursive")) fail("recursive loops are not supported");
    ++loop_depth_;
    s->body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    if (next().text == "else") s->else_body = parse_statements({"endfor"}, true);
    return s;
  }

  StmtPtr parse_if() {
    auto s = make_stmt(StmtKind::kIf, next());
    s->expr = parse_tuple(false, {}, false);
    s->body = parse_statements({"elif", "else", "endif"}, false);
    const Token& t = next();
    if (t.text == "elif") {
      DepthGuard guard(this);
      s->else_body.push_back(parse_if_tail(t));
    } else if (t.text == "else") {
      s->else_body = parse_statements({"endif"}, true);
    }
    return s;
  }

  // `elif` chains are parsed iteratively into nested kIf nodes.
  StmtPtr parse_if_tail(const Token& at) {
    auto s = make_stmt(StmtKind::kIf, at);
    s->expr = parse_tuple(false, {}, false);
    s->body = parse_statements({"elif", "else", "endif"}, false);
    const Token& t = next();
    if (t.text == "elif") {
      DepthGuard guard(this);
      s->else_body.push_back(parse_if_tail(t));
    } else if (t.text == "else") {
      s->else_body = parse_statements({"endif"}, true);
    }
    return s;
  }

  StmtPtr parse_set() {
    const Token& at = next();
    if (cur().type == Tok::kName && look().type == Tok::kOp && look().text == ".") {
      auto s = make_stmt(StmtKind::kSet, at);
      s->name = next().text;
      next();  // .
      s->attr = expect_name();
      expect_op("=");
      s->expr = parse_tuple(true, {}, false);
      return s;
    }
    auto s = make_stmt(StmtKind::kSet, at);
    parse_assign_target(*s, {});
    if (skip_op("=")) {
      s->expr = parse_tuple(true, {}, false);
      return s;
    }
    if (s->tuple_target) fail("can't assign a block to a tuple");
    s->kind = StmtKind::kSetBlock;
    if (is_op("|")) s->filters = parse_filter(nullptr, false);
    s->body = parse_statements({"endset"}, true);
    return s;
  }

  void parse_signature(Stmt& s) {
    expect_op("(");
    while (!is_op(")")) {
      if (!s.params.empty()) expect_op(",");
      if (is_op(")")) break;
      s.params.push_back(expect_name());
      if (skip_op("=")) {
        s.defaults.push_back(parse_expression(true));
      } else {
        for (const ExprPtr& d : s.defaults) {
          if (d) fail("non-default argument follows default argument");
        }
        s.defaults.push_back(nullptr);
      }
    }
    expect_op(")");
  }

  StmtPtr parse_macro() {
    auto s = make_stmt(StmtKind::kMacro, next());
    s->name = expect_name();
    parse_signature(*s);
    const int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_statements({"endmacro"}, true);
    loop_depth_ = saved;
    return s;
  }

  StmtPtr parse_call_block() {
    auto s = make_stmt(StmtKind::kCallBlock, next());
    if (is_op("(")) parse_signature(*s);
    s->expr = parse_expression(true);
    if (s->expr->kind != ExprKind::kCall) fail("expected call");
    for (const auto& kv : s->expr->kwargs) {  // the call block passes caller= itself
      if (kv.first == "caller") fail("keyword argument repeated: caller");
    }
    const int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_statements({"endcall"}, true);
    loop_depth_ = saved;
    return s;
  }

  StmtPtr parse_filter_block() {
    auto s = make_stmt(StmtKind::kFilterBlock, next());
    s->filters = parse_filter(nullptr, true);
    s->body = parse_statements({"endfilter"}, true);
    return s;
  }

  StmtPtr parse_with() {
    auto s = make_stmt(StmtKind::kWith, next());
    while (cur().type != Tok::kBlockEnd) {
      if (!s->targets.empty()) expect_op(",");
      s->targets.push_back(expect_name());
      expect_op("=");
      s->defaults.push_back(parse_expression(true));
    }
    s->body = parse_statements({"endwith"}, true);
    return s;
  }

  // ---- expressions ----

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    ExprPtr e = parse_or();
    while (is_name("if")) {
      auto c = make(ExprKind::kCond, next());
      ExprPtr cond = parse_or();
      ExprPtr other;
      if (skip_name("else")) other = parse_expression(true);
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(other));
      e = checked(std::move(c));
    }
    return e;
  }

  // Left-associative chains (a + b + c, x|f|g) grow the tree without recursion in the
  // parser; their height is bounded here so evaluating and freeing them stays shallow.
  ExprPtr checked(ExprPtr e) {
    for (const ExprPtr& a : e->args) {
      if (a) e->height = std::max(e->height, a->height + 1);
    }
    for (const auto& kv : e->kwargs) e->height = std::max(e->height, kv.second->height + 1);
    for (const Expr* d : {e->dyn_args.get(), e->dyn_kwargs.get()}) {
      if (d) e->height = std::max(e->height, d->height + 1);
    }
    if (e->height > kMaxExprHeight) throw Error("expression nests too deeply", e->line, e->col);
    return e;
  }

  ExprPtr binary(ExprKind kind, const Token& at, ExprPtr l, ExprPtr r, std::string op = "") {
    auto e = make(kind, at);
    e->name = std::move(op);
    e->args.push_back(std::move(l));
    e->args.push_back(std::move(r));
    return checked(std::move(e));
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const Token& at = next();
      e = binary(ExprKind::kOr, at, std::move(e), parse_and());
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const Token& at = next();
      e = binary(ExprKind::kAnd, at, std::move(e), parse_not());
    }
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(this);
      auto e = make(ExprKind::kNot, next());
      e->args.push_back(parse_not());
      return checked(std::move(e));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Token& at = cur();
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().type == Tok::kOp && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                     cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && look().type == Tok::kName && look().text == "in") {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(ExprKind::kCompare, at);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? checked(std::move(cmp)) : std::move(first);
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& at = next();
      e = binary(ExprKind::kBinary, at, std::move(e), parse_concat(), at.text);
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const Token& at = next();
      e = binary(ExprKind::kBinary, at, std::move(e), parse_math2(), "~");
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& at = next();
      e = binary(ExprKind::kBinary, at, std::move(e), parse_pow(), at.text);
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const Token& at = next();
      e = binary(ExprKind::kBinary, at, std::move(e), parse_unary(true), "**");
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      auto u = make(is_op("-") ? ExprKind::kNeg : ExprKind::kPos, cur());
      next();
      u->args.push_back(parse_unary(false));
      e = checked(std::move(u));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    switch (t.type) {
      case Tok::kName: {
        next();
        if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
          auto e = make(ExprKind::kConst, t);
          e->value = Value(t.text == "true" || t.text == "True");
          return e;
        }
        if (t.text == "none" || t.text == "None") {
          auto e = make(ExprKind::kConst, t);
          e->value = Value::none();
          return e;
        }
        auto e = make(ExprKind::kName, t);
        e->name = t.text;
        return e;
      }
      case Tok::kString: {
        std::string s = next().text;
        while (cur().type == Tok::kString) s += next().text;
        auto e = make(ExprKind::kConst, t);
        e->value = Value(std::move(s));
        return e;
      }
      case Tok::kInt: {
        auto e = make(ExprKind::kConst, t);
        e->value = Value(next().int_value);
        return e;
      }
      case Tok::kFloat: {
        auto e = make(ExprKind::kConst, t);
        e->value = Value(next().float_value);
        return e;
      }
      case Tok::kOp:
        if (t.text == "(") {
          next();
          ExprPtr e = parse_tuple(true, {}, true);
          expect_op(")");
          return e;
        }
        if (t.text == "[") return parse_list();
        if (t.text == "{") return parse_dict();
        break;
      default:
        break;
    }
    fail("unexpected '" + describe(t) + "'");
  }

  // Comma-separated expressions; a tuple when there is a comma.
  ExprPtr parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                      bool explicit_parens) {
    const Token& at = cur();
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      const Token& c = cur();
      bool end = c.type == Tok::kVarEnd || c.type == Tok::kBlockEnd || (c.type == Tok::kOp && c.text == ")");
      for (std::string_view e : extra_end) end = end || is_name(e);
      if (end) break;
      items.push_back(parse_expression(with_condexpr));
      if (!is_op(",")) break;
      is_tuple = true;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) fail("Expected an expression, got '" + describe(cur()) + "'");
    }
    auto e = make(ExprKind::kTuple, at);
    e->args = std::move(items);
    return checked(std::move(e));
  }

  ExprPtr parse_list() {
    auto e = make(ExprKind::kList, next());
    while (!is_op("]")) {
      if (!e->args.empty()) expect_op(",");
      if (is_op("]")) break;
      e->args.push_back(parse_expression(true));
    }
    expect_op("]");
    return checked(std::move(e));
  }

  ExprPtr parse_dict() {
    auto e = make(ExprKind::kDict, next());
    while (!is_op("}")) {
      if (!e->args.empty()) expect_op(",");
      if (is_op("}")) break;
      e->args.push_back(parse_expression(true));
      expect_op(":");
      e->args.push_back(parse_expression(true));
    }
    expect_op("}");
    return checked(std::move(e));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (is_op(".") || is_op("[")) {
        e = checked(parse_subscript(std::move(e)));
      } else if (is_op("(")) {
        e = checked(parse_call(std::move(e)));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        e = parse_filter(std::move(e), false);
      } else if (is_name("is")) {
        e = checked(parse_test(std::move(e)));
      } else if (is_op("(")) {
        e = checked(parse_call(std::move(e)));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj) {
    const Token& at = next();
    if (at.text == ".") {
      const Token& t = cur();
      if (t.type == Tok::kName) {
        auto e = make(ExprKind::kGetAttr, t);
        e->name = next().text;
        e->args.push_back(std::move(obj));
        return e;
      }
      if (t.type == Tok::kInt) {
        auto e = make(ExprKind::kGetItem, t);
        auto k = make(ExprKind::kConst, t);
        k->value = Value(next().int_value);
        e->args.push_back(std::move(obj));
        e->args.push_back(std::move(k));
        return e;
      }
      fail("expected name or number");
    }
    // `[`: an expression or a slice.
    auto e = make(ExprKind::kGetItem, at);
    e->args.push_back(std::move(obj));
    std::vector<ExprPtr> parts;  // start, stop, step when slicing
    bool slice = false;
    if (!is_op(":")) {
      parts.push_back(parse_expression(true));
      if (!is_op(":")) {
        if (is_op(",")) fail("tuple subscripts are not supported");
        expect_op("]");
        e->args.push_back(std::move(parts[0]));
        return e;
      }
    } else {
      parts.push_back(nullptr);
    }
    slice = true;
    next();  // ':'
    parts.push_back(is_op(":") || is_op("]") ? nullptr : parse_expression(true));
    if (skip_op(":")) {
      parts.push_back(is_op("]") ? nullptr : parse_expression(true));
    } else {
      parts.push_back(nullptr);
    }
    expect_op("]");
    if (slice) e->kind = ExprKind::kSlice;
    for (ExprPtr& p : parts) e->args.push_back(std::move(p));
    return e;
  }

  // jinja2's argument list: positional arguments, then keywords, with at most one
  // `*iterable` (after the positional ones) and one `**mapping` (last of all).
  void parse_call_args(Expr& e) {
    expect_op("(");
    auto ensure = [this](bool ok) {
      if (!ok) fail("invalid syntax for function call expression");
    };
    bool need_comma = false;
    while (!is_op(")")) {
      if (need_comma) {
        expect_op(",");
        if (is_op(")")) break;
      }
      if (is_op("*")) {
        ensure(!e.dyn_args && !e.dyn_kwargs);
        next();
        e.dyn_args = parse_expression(true);
      } else if (is_op("**")) {
        ensure(!e.dyn_kwargs);
        next();
        e.dyn_kwargs = parse_expression(true);
      } else if (cur().type == Tok::kName && look().type == Tok::kOp && look().text == "=") {
        ensure(!e.dyn_kwargs);
        // Python rejects this when compiling jinja2's output, so jinja2 fails at parse time.
        for (const auto& kv : e.kwargs) {
          if (kv.first == cur().text) fail("keyword argument repeated: " + kv.first);
        }
        std::string key = next().text;
        next();
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        ensure(!e.dyn_args && !e.dyn_kwargs && e.kwargs.empty());
        e.args.push_back(parse_expression(true));
      }
      need_comma = true;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = make(ExprKind::kCall, cur());
    e->line = callee->line;  // errors point at what is called, not at the parenthesis
    e->col = callee->col;
    e->args.push_back(std::move(callee));
    parse_call_args(*e);
    return e;
  }

  // `| name(args)` chains; `start_inline` means the first filter has no leading pipe
  // (filter blocks). A null `input` stands for the value the chain is applied to later.
  ExprPtr parse_filter(ExprPtr input, bool start_inline) {
    ExprPtr e = std::move(input);
    bool first = true;
    while (is_op("|") || (start_inline && first)) {
      if (!(start_inline && first)) next();
      first = false;
      DepthGuard guard(this);
      auto f = make(ExprKind::kFilter, cur());
      f->name = expect_name();
      while (is_op(".")) {
        next();
        f->name += "." + expect_name();
      }
      f->args.push_back(std::move(e));
      if (is_op("(")) parse_call_args(*f);
      e = checked(std::move(f));
    }
    return e;
  }

  ExprPtr parse_test(ExprPtr value) {
    const Token& at = next();  // is
    const bool negated = skip_name("not");
    auto t = make(ExprKind::kTest, cur());
    t->name = expect_name();
    while (is_op(".")) {
      next();
      t->name += "." + expect_name();
    }
    t->args.push_back(std::move(value));
    const Token& c = cur();
    if (is_op("(")) {
      parse_call_args(*t);
    } else if ((c.type == Tok::kName || c.type == Tok::kString || c.type == Tok::kInt ||
                c.type == Tok::kFloat || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("You cannot chain multiple tests with is");
      DepthGuard guard(this);
      t->args.push_back(parse_postfix(parse_primary()));
    }
    if (!negated) return t;
    auto n = make(ExprKind::kNot, at);
    n->args.push_back(std::move(t));
    return checked(std::move(n));
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse_template(std::string_view source) {
  Body body = Parser(lex(source)).parse_all();
  resolve_template(body);
  return body;
}

}  // namespace tessera::jinja
