// The pass after parsing: binds filter and test names to their implementations (jinja2
// rejects unknown ones at compile time, except inside `if`s and conditional expressions)
// and notes which loops read `loop`.
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
  return false;
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

void resolve_stmt(Stmt* s, bool soft) {
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
