// The pass after parsing: binds filter and test names to their implementations (jinja2
// rejects unknown ones at compile time, except inside `if`s and conditional expressions)
// and notes which loops read `loop` and which macros read varargs, kwargs or caller.
#include "chat/jinja/builtins.h"
#include "chat/jinja/parser.h"

namespace tessera::jinja {
namespace {

// Resolves filter and test names; unknown ones fail unless `soft` (inside an `if` or a
// conditional expression), as in jinja2's compiler.
void resolve_expr(Expr* e, bool soft) {
  if (e == nullptr) return;
  if (e->kind == ExprKind::kCond) soft = true;
  if (e->kind == ExprKind::kFilter || e->kind == ExprKind::kTest) {
    e->fn = e->kind == ExprKind::kFilter ? reinterpret_cast<const void*>(find_filter(e->name))
                                         : reinterpret_cast<const void*>(find_test(e->name));
    if (e->fn == nullptr && !soft) {
      throw Error(std::string("No ") + (e->kind == ExprKind::kFilter ? "filter" : "test") +
                      " named '" + e->name + "'.",
                  e->line, e->col);
    }
  }
  for (ExprPtr& a : e->args) resolve_expr(a.get(), soft);
  for (auto& kv : e->kwargs) resolve_expr(kv.second.get(), soft);
  resolve_expr(e->dyn_args.get(), soft);
  resolve_expr(e->dyn_kwargs.get(), soft);
}

void resolve_body(Body& body, bool soft);

bool mentions_name(const Expr* e, const std::string& name) {
  if (e == nullptr) return false;
  if (e->kind == ExprKind::kName && e->name == name) return true;
  for (const ExprPtr& a : e->args) {
    if (mentions_name(a.get(), name)) return true;
  }
  for (const auto& kv : e->kwargs) {
    if (mentions_name(kv.second.get(), name)) return true;
  }
  return mentions_name(e->dyn_args.get(), name) || mentions_name(e->dyn_kwargs.get(), name);
}

bool mentions_name(const Body& body, const std::string& name) {
  for (const StmtPtr& s : body) {
    if (mentions_name(s->expr.get(), name) || mentions_name(s->cond.get(), name) ||
        mentions_name(s->filters.get(), name) || mentions_name(s->body, name) || mentions_name(s->else_body, name)) {
      return true;
    }
    for (const ExprPtr& d : s->defaults) {
      if (mentions_name(d.get(), name)) return true;
    }
  }
  return false;
}

// jinja2's find_undeclared(macro body, ("caller", "kwargs", "varargs")): a name counts as
// read when it is loaded before anything in the walk (assignment, loop or with target,
// parameter of a nested macro or call block) declares it; nested bodies are walked too.
// The walk follows the field order of jinja2's nodes, as that order decides.
class SpecialNames {
 public:
  static constexpr const char* kNames[3] = {"varargs", "kwargs", "caller"};
  bool read[3] = {false, false, false};

  void body(const Body& b) {
    for (const StmtPtr& s : b) stmt(*s);
  }

 private:
  bool open_[3] = {true, true, true};

  int index(const std::string& name) const {
    for (int i = 0; i < 3; ++i) {
      if (name == kNames[i]) return i;
    }
    return -1;
  }
  void load(const std::string& name) {
    const int i = index(name);
    if (i >= 0 && open_[i]) read[i] = true;
  }
  void declare(const std::string& name) {
    const int i = index(name);
    if (i >= 0) open_[i] = false;
  }
  void expr(const Expr* e) {
    if (e == nullptr) return;
    if (e->kind == ExprKind::kName) load(e->name);
    for (const ExprPtr& a : e->args) expr(a.get());
    for (const auto& kv : e->kwargs) expr(kv.second.get());
    expr(e->dyn_args.get());
    expr(e->dyn_kwargs.get());
  }
  void stmt(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::kFor:  // target, iter, body, else, test
        for (const std::string& t : s.targets) declare(t);
        expr(s.expr.get());
        body(s.body);
        body(s.else_body);
        expr(s.cond.get());
        return;
      case StmtKind::kSet:  // target, value (a namespace attribute declares nothing)
        if (s.attr.empty()) {
          for (const std::string& t : s.targets) declare(t);
        }
        expr(s.expr.get());
        return;
      case StmtKind::kSetBlock:  // target, filter, body
        declare(s.targets[0]);
        expr(s.filters.get());
        body(s.body);
        return;
      case StmtKind::kFilterBlock:  // body, filter
        body(s.body);
        expr(s.filters.get());
        return;
      case StmtKind::kWith:  // targets, values, body
        for (const std::string& t : s.targets) declare(t);
        break;
      case StmtKind::kMacro:  // parameters, defaults, body
        for (const std::string& p : s.params) declare(p);
        break;
      case StmtKind::kCallBlock:  // call, parameters, defaults, body
        expr(s.expr.get());
        for (const std::string& p : s.params) declare(p);
        for (const ExprPtr& d : s.defaults) expr(d.get());
        body(s.body);
        return;
      default:
        break;
    }
    // The rest: print, if (test, body, else), with/macro (defaults, body), generation.
    expr(s.expr.get());
    for (const ExprPtr& d : s.defaults) expr(d.get());
    body(s.body);
    body(s.else_body);
  }
};

// jinja2's macro_body: which extras a macro (or a call block's caller) accepts.
void find_special_params(Stmt* s) {
  SpecialNames names;
  names.body(s->body);
  auto is_param = [s](const char* name) {
    for (const std::string& p : s->params) {
      if (p == name) return true;
    }
    return false;
  };
  s->catch_varargs = names.read[0] && !is_param("varargs");
  s->catch_kwargs = names.read[1] && !is_param("kwargs");
  if (!names.read[2]) return;
  for (size_t i = 0; i < s->params.size(); ++i) {
    if (s->params[i] == "caller" && !s->defaults[i]) {
      throw Error("When defining macros or call blocks the special \"caller\" argument must be omitted or be given a default.",
                  s->line, s->col);
    }
  }
  s->catch_caller = !is_param("caller");
}

void resolve_stmt(Stmt* s, bool soft) {
  if (s->kind == StmtKind::kMacro || s->kind == StmtKind::kCallBlock) find_special_params(s);
  switch (s->kind) {
    case StmtKind::kIf:
      resolve_expr(s->expr.get(), true);
      resolve_body(s->body, true);
      resolve_body(s->else_body, true);
      return;
    case StmtKind::kFor:
      resolve_expr(s->expr.get(), soft);
      resolve_expr(s->cond.get(), false);
      s->uses_loop = mentions_name(s->body, "loop");
      break;
    case StmtKind::kWith:
      for (ExprPtr& d : s->defaults) resolve_expr(d.get(), soft);
      break;
    default:
      resolve_expr(s->expr.get(), false);
      resolve_expr(s->filters.get(), false);
      for (ExprPtr& d : s->defaults) resolve_expr(d.get(), false);
  }
  resolve_body(s->body, false);
  resolve_body(s->else_body, false);
}

void resolve_body(Body& body, bool soft) {
  for (StmtPtr& s : body) {
    // Statements that open no frame of their own (print, set) inherit the softness.
    if (s->kind == StmtKind::kPrint || s->kind == StmtKind::kSet) {
      resolve_expr(s->expr.get(), soft);
    } else {
      resolve_stmt(s.get(), soft);
    }
  }
}

}  // namespace

void resolve_template(Body& body) { resolve_body(body, false); }

}  // namespace tessera::jinja
