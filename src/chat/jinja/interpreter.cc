// Tree-walking interpreter for parsed templates. Errors travel as jinja::Error exceptions
// inside the engine and become Status at Template::render.
#include <algorithm>
#include <cstddef>
#include <unordered_map>

#include "chat/jinja/ast.h"
#include "chat/jinja/builtins.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/parser.h"
#include "chat/jinja/template.h"

namespace tessera::jinja {
namespace {

// Variables of one frame. jinja2 gives every loop iteration, macro call, `with` and
// block-set its own frame; `if` shares its parent's.
struct Scope {
  std::shared_ptr<Scope> parent;
  std::unordered_map<std::string, Value> vars;

  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent.get()) {
      auto it = s->vars.find(name);
      if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
  }
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { kNormal, kBreak, kContinue };

class Interpreter final : public Runtime {
 public:
  Interpreter(const RenderOptions& options, std::string* out)
      : Runtime(options.limits), out_(out) {
    now = options.now;
  }

  ~Interpreter() override {
    // Namespaces are the only mutable values, so the only way to build a reference cycle;
    // emptying them frees whatever the template tied together.
    for (auto& weak : namespaces_) {
      if (auto ns = weak.lock()) ns->clear();
    }
  }

  void run(const Body& body, const Value& context) {
    root_ = std::make_shared<Scope>();
    if (context.is_dict()) {
      for (const auto& [k, v] : context.dict().entries()) {
        if (k.is_string()) root_->vars[k.str()] = v;
      }
    }
    exec_body(body, root_);
  }

  Value call(const Value& fn, CallArgs& args) override {
    if (fn.is_undefined()) fail_undefined(fn);
    if (!fn.is_function()) throw Error("'" + type_name(fn) + "' object is not callable");
    const Function& f = fn.function();
    if (f.name == "namespace" && !f.is_macro) return make_namespace(args);
    return f.fn(*this, args);
  }

 private:
  // ---- statements ----

  Flow exec_body(const Body& body, const ScopePtr& scope) {
    for (const StmtPtr& s : body) {
      Flow f = exec(*s, scope);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  void write(std::string_view text) {
    if (out_->size() + text.size() > limits().max_output_bytes) throw Error("rendered output exceeds the size limit");
    charge(text.size() / 8);
    out_->append(text);
  }

  Flow exec(const Stmt& s, const ScopePtr& scope) {
    charge(1);
    try {
      switch (s.kind) {
        case StmtKind::kOutput:
          write(s.text);
          return Flow::kNormal;
        case StmtKind::kPrint: {
          Value v = eval(*s.expr, scope);
          if (v.is_string()) {
            write(v.str());
          } else {
            write(to_str(v));
          }
          return Flow::kNormal;
        }
        case StmtKind::kIf:
          return exec_body(truthy(eval(*s.expr, scope)) ? s.body : s.else_body, scope);
        case StmtKind::kFor:
          return exec_for(s, scope);
        case StmtKind::kSet:
          exec_set(s, scope);
          return Flow::kNormal;
        case StmtKind::kSetBlock: {
          Value v(capture(s.body, std::make_shared<Scope>(Scope{scope, {}})));
          if (s.filters) v = apply_filters(*s.filters, v, scope);
          scope->vars[s.targets[0]] = v;
          return Flow::kNormal;
        }
        case StmtKind::kMacro:
          scope->vars[s.name] = make_macro(s, s.name, scope);
          return Flow::kNormal;
        case StmtKind::kCallBlock:
          exec_call_block(s, scope);
          return Flow::kNormal;
        case StmtKind::kFilterBlock: {
          Value v(capture(s.body, std::make_shared<Scope>(Scope{scope, {}})));
          write(to_str(apply_filters(*s.filters, v, scope)));
          return Flow::kNormal;
        }
        case StmtKind::kWith: {
          auto inner = std::make_shared<Scope>(Scope{scope, {}});
          for (size_t i = 0; i < s.targets.size(); ++i) inner->vars[s.targets[i]] = eval(*s.defaults[i], scope);
          return exec_body(s.body, inner);
        }
        case StmtKind::kBreak:
          return Flow::kBreak;
        case StmtKind::kContinue:
          return Flow::kContinue;
        case StmtKind::kGeneration:
          return exec_body(s.body, scope);
      }
    } catch (Error& e) {
      e.set_location(s.line, s.col);
      throw;
    }
    return Flow::kNormal;
  }

  std::string capture(const Body& body, const ScopePtr& scope) {
    std::string buf;
    std::string* saved = out_;
    out_ = &buf;
    try {
      exec_body(body, scope);
    } catch (...) {
      out_ = saved;
      throw;
    }
    out_ = saved;
    return buf;
  }

  void assign_targets(Scope& scope, const Stmt& s, const Value& v) {
    if (!s.tuple_target) {
      scope.vars[s.targets[0]] = v;
      return;
    }
    std::vector<Value> items = iterate(*this, v);
    if (items.size() != s.targets.size()) {
      throw Error(items.size() > s.targets.size()
                      ? "too many values to unpack (expected " + std::to_string(s.targets.size()) + ")"
                      : "not enough values to unpack (expected " + std::to_string(s.targets.size()) +
                            ", got " + std::to_string(items.size()) + ")");
    }
    for (size_t i = 0; i < items.size(); ++i) scope.vars[s.targets[i]] = items[i];
  }

  void exec_set(const Stmt& s, const ScopePtr& scope) {
    Value v = eval(*s.expr, scope);
    if (s.attr.empty()) {
      assign_targets(*scope, s, v);
      return;
    }
    const Value* ns = scope->find(s.name);
    if (ns == nullptr) ns = &lookup_global(s.name);
    if (!ns->is_dict() || !ns->dict().is_namespace) {
      throw Error("cannot assign attribute on non-namespace object");
    }
    if (!s.attr.empty() && s.attr[0] == '_') {
      throw Error("Chat templates cannot store underscore-prefixed attributes on a namespace, but got '" +
                  s.attr + "'. Please rename the attribute.");
    }
    ns->dict().set(Value(s.attr), v);
  }

  const Value& lookup_global(const std::string& name) {
    auto it = globals_.find(name);
    if (it == globals_.end()) it = globals_.emplace(name, find_global(name)).first;
    return it->second;
  }

  Value make_loop(const std::vector<Value>& items, size_t i) {
    auto d = std::make_shared<Dict>();
    const int64_t n = static_cast<int64_t>(items.size());
    const int64_t idx = static_cast<int64_t>(i);
    d->set(Value("index"), Value(idx + 1));
    d->set(Value("index0"), Value(idx));
    d->set(Value("revindex"), Value(n - idx));
    d->set(Value("revindex0"), Value(n - idx - 1));
    d->set(Value("first"), Value(i == 0));
    d->set(Value("last"), Value(idx == n - 1));
    d->set(Value("length"), Value(n));
    d->set(Value("depth"), Value(1));
    d->set(Value("depth0"), Value(0));
    if (i > 0) d->set(Value("previtem"), items[i - 1]);
    if (idx + 1 < n) d->set(Value("nextitem"), items[i + 1]);
    auto cycle = std::make_shared<Function>();
    cycle->name = "cycle";
    cycle->fn = [idx](Runtime&, CallArgs& a) -> Value {
      if (a.args.empty()) throw Error("no items for cycling given");
      return a.args[static_cast<size_t>(idx) % a.args.size()];
    };
    d->set(Value("cycle"), Value::function(std::move(cycle)));
    return Value::dict(std::move(d));
  }

  Flow exec_for(const Stmt& s, const ScopePtr& scope) {
    std::vector<Value> items = iterate(*this, eval(*s.expr, scope));
    if (s.cond) {
      // The inline `if` filters before loop.index and loop.length are computed.
      std::vector<Value> kept;
      for (const Value& v : items) {
        auto probe = std::make_shared<Scope>(Scope{scope, {}});
        assign_targets(*probe, s, v);
        if (truthy(eval(*s.cond, probe))) kept.push_back(v);
      }
      items = std::move(kept);
    }
    for (size_t i = 0; i < items.size(); ++i) {
      charge(4);
      auto iter = std::make_shared<Scope>(Scope{scope, {}});
      assign_targets(*iter, s, items[i]);
      if (s.uses_loop) {
        charge(16);  // building the loop object is the costly part of an iteration
        iter->vars["loop"] = make_loop(items, i);
      }
      if (exec_body(s.body, iter) == Flow::kBreak) break;
    }
    if (items.empty()) return exec_body(s.else_body, scope);
    return Flow::kNormal;
  }

  // A macro (or a call block's `caller`) as a function value. It holds its defining
  // scope weakly: the scope owns the macro, and a strong reference would be a cycle.
  Value make_macro(const Stmt& s, const std::string& name, const ScopePtr& scope) {
    auto fn = std::make_shared<Function>();
    fn->name = name;
    fn->is_macro = true;
    std::weak_ptr<Scope> weak = scope;
    const Stmt* def = &s;
    fn->fn = [this, def, weak](Runtime&, CallArgs& a) -> Value { return call_macro(*def, weak, a); };
    return Value::function(std::move(fn));
  }

  // jinja2's Macro.__call__: positional arguments fill the parameters in order, keywords
  // the parameters left; what remains goes to `varargs` / `kwargs` when the body reads
  // them and is an error otherwise.
  Value call_macro(const Stmt& def, const std::weak_ptr<Scope>& weak, CallArgs& a) {
    if (call_depth_ >= limits().max_call_depth) throw Error("maximum recursion depth exceeded in macro calls");
    ScopePtr parent = weak.lock();
    if (!parent) parent = root_;
    auto frame = std::make_shared<Scope>(Scope{parent, {}});
    auto name = [&def] { return "'" + (def.kind == StmtKind::kMacro ? def.name : std::string("caller")) + "'"; };
    const size_t n = def.params.size();
    const size_t positional = std::min(n, a.args.size());
    std::vector<bool> used(a.kwargs.size(), false);
    // Takes the keyword argument `key` out of the unused ones.
    auto take = [&](const std::string& key) -> const Value* {
      charge(a.kwargs.size() / 8);
      for (size_t j = 0; j < a.kwargs.size(); ++j) {
        if (!used[j] && a.kwargs[j].first == key) {
          used[j] = true;
          return &a.kwargs[j].second;
        }
      }
      return nullptr;
    };
    std::vector<const Value*> bound(n, nullptr);
    for (size_t i = 0; i < positional; ++i) bound[i] = &a.args[i];
    // Once every parameter is filled positionally, a keyword of the same name is an extra.
    for (size_t i = positional; i < n; ++i) bound[i] = take(def.params[i]);
    for (size_t i = 0; i < n; ++i) {
      if (bound[i]) frame->vars[def.params[i]] = *bound[i];
    }
    if (def.catch_caller) {
      const Value* caller = take("caller");
      frame->vars["caller"] = caller ? *caller : Value::undefined("No caller defined");
    }
    auto kwargs = def.catch_kwargs ? std::make_shared<Dict>() : nullptr;
    for (size_t j = 0; j < a.kwargs.size(); ++j) {
      if (used[j]) continue;
      if (!kwargs) {
        for (size_t k = j; k < a.kwargs.size(); ++k) {
          if (!used[k] && a.kwargs[k].first == "caller") {
            throw Error("macro " + name() + " was invoked with two values for the special caller argument. "
                        "This is most likely a bug.");
          }
        }
        throw Error("macro " + name() + " takes no keyword argument '" + a.kwargs[j].first + "'");
      }
      kwargs->set(Value(a.kwargs[j].first), a.kwargs[j].second);
    }
    if (a.args.size() > n && !def.catch_varargs) {
      throw Error("macro " + name() + " takes not more than " + std::to_string(n) + " argument(s)");
    }
    if (kwargs) frame->vars["kwargs"] = Value::dict(std::move(kwargs));
    if (def.catch_varargs) {
      std::vector<Value> extra(a.args.begin() + static_cast<std::ptrdiff_t>(positional), a.args.end());
      frame->vars["varargs"] = Value::list(std::move(extra), true);
    }
    for (size_t i = 0; i < n; ++i) {
      if (bound[i]) continue;
      frame->vars[def.params[i]] = def.defaults[i] ? eval(*def.defaults[i], frame)
                                                   : Value::undefined("parameter '" + def.params[i] + "' was not provided");
    }
    ++call_depth_;
    std::string out;
    try {
      out = capture(def.body, frame);
    } catch (...) {
      --call_depth_;
      throw;
    }
    --call_depth_;
    return Value(std::move(out));
  }

  void exec_call_block(const Stmt& s, const ScopePtr& scope) {
    const Expr& call_expr = *s.expr;
    Value callee = eval(*call_expr.args[0], scope);
    CallArgs args = eval_args(call_expr, 1, scope);
    for (const auto& kv : args.kwargs) {  // only from **mapping: the parser rejects caller=
      if (kv.first == "caller") throw Error("got multiple values for keyword argument 'caller'");
    }
    args.kwargs.emplace_back("caller", make_macro(s, "caller", scope));
    Value result = call(callee, args);
    write(to_str(result));
  }

  Value make_namespace(CallArgs& a) {
    auto ns = std::make_shared<Dict>();
    ns->is_namespace = true;
    for (const Value& v : a.args) {
      if (!v.is_mapping()) throw Error("namespace() positional arguments must be mappings");
      for (const auto& [k, val] : v.dict().entries()) ns->set(k, val);
    }
    for (auto& [k, v] : a.kwargs) ns->set(Value(k), v);
    for (const auto& [k, v] : ns->entries()) {
      if (k.is_string() && !k.str().empty() && k.str()[0] == '_') {
        throw Error("Chat templates cannot store underscore-prefixed attributes on a namespace, but got '" +
                    k.str() + "'. Please rename the attribute.");
      }
    }
    namespaces_.push_back(ns);
    return Value::dict(std::move(ns));
  }

  // ---- expressions ----

  // The arguments of a call, filter or test (from args[first]), unpacking `*iterable` and
  // `**mapping` as Python does: positional then *, keywords then **.
  CallArgs eval_args(const Expr& e, size_t first, const ScopePtr& scope) {
    CallArgs a;
    a.args.reserve(e.args.size() - first);
    for (size_t i = first; i < e.args.size(); ++i) a.args.push_back(eval(*e.args[i], scope));
    for (const auto& [k, v] : e.kwargs) a.kwargs.emplace_back(k, eval(*v, scope));
    if (e.dyn_args) {
      Value v = eval(*e.dyn_args, scope);
      // Undefined iterates as empty, as jinja2's default Undefined does.
      if (!v.is_undefined() && !v.is_list() && !v.is_string() && !v.is_mapping()) {
        throw Error("Value after * must be an iterable, not " + type_name(v), e.dyn_args->line, e.dyn_args->col);
      }
      for (Value& x : iterate(*this, v)) a.args.push_back(std::move(x));
      check_list_size(a.args.size());
    }
    if (e.dyn_kwargs) {
      Value v = eval(*e.dyn_kwargs, scope);
      const int line = e.dyn_kwargs->line, col = e.dyn_kwargs->col;
      if (v.is_undefined()) throw Error(v.undefined_message(), line, col);
      if (!v.is_mapping()) throw Error("argument after ** must be a mapping, not " + type_name(v), line, col);
      charge(v.dict().size() * (e.kwargs.size() + 1));
      for (const auto& [k, val] : v.dict().entries()) {
        if (!k.is_string()) throw Error("keywords must be strings", line, col);
        // Keys of one dict are distinct: only the explicit keywords can clash.
        for (const auto& kv : e.kwargs) {
          if (kv.first == k.str()) throw Error("got multiple values for keyword argument '" + kv.first + "'", line, col);
        }
        a.kwargs.emplace_back(k.str(), val);
      }
      check_list_size(a.kwargs.size());
    }
    return a;
  }

  // A filter chain whose innermost input is `input` (filter blocks, block sets).
  Value apply_filters(const Expr& chain, const Value& input, const ScopePtr& scope) {
    Value v = chain.args[0] ? apply_filters(*chain.args[0], input, scope) : input;
    return apply_filter(chain, v, scope);
  }

  Value apply_filter(const Expr& e, const Value& input, const ScopePtr& scope) {
    if (e.fn == nullptr) throw Error("No filter named '" + e.name + "'.", e.line, e.col);
    CallArgs a = eval_args(e, 1, scope);
    return reinterpret_cast<FilterFn>(const_cast<void*>(e.fn))(*this, input, a);
  }

  Value eval(const Expr& e, const ScopePtr& scope) {
    charge(1);
    try {
      return eval_inner(e, scope);
    } catch (Error& err) {
      err.set_location(e.line, e.col);
      throw;
    }
  }

  Value eval_inner(const Expr& e, const ScopePtr& scope) {
    switch (e.kind) {
      case ExprKind::kConst:
        return e.value;
      case ExprKind::kName: {
        if (const Value* v = scope->find(e.name)) return *v;
        const Value& g = lookup_global(e.name);
        if (!g.is_undefined()) return g;
        return Value::undefined("'" + e.name + "' is undefined");
      }
      case ExprKind::kList:
      case ExprKind::kTuple: {
        std::vector<Value> items;
        items.reserve(e.args.size());
        for (const ExprPtr& a : e.args) items.push_back(eval(*a, scope));
        return Value::list(std::move(items), e.kind == ExprKind::kTuple);
      }
      case ExprKind::kDict: {
        auto d = std::make_shared<Dict>();
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          Value k = eval(*e.args[i], scope);
          d->set(k, eval(*e.args[i + 1], scope));
        }
        return Value::dict(std::move(d));
      }
      case ExprKind::kGetAttr:
        return getattr(eval(*e.args[0], scope), e.name);
      case ExprKind::kGetItem:
        return getitem(eval(*e.args[0], scope), eval(*e.args[1], scope));
      case ExprKind::kSlice: {
        Value obj = eval(*e.args[0], scope);
        auto part = [&](size_t i) { return e.args[i] ? eval(*e.args[i], scope) : Value::none(); };
        Value lo = part(1), hi = part(2), st = part(3);
        return slice(*this, obj, lo, hi, st);
      }
      case ExprKind::kCall: {
        Value callee = eval(*e.args[0], scope);
        CallArgs a = eval_args(e, 1, scope);
        return call(callee, a);
      }
      case ExprKind::kFilter:
        return apply_filter(e, eval(*e.args[0], scope), scope);
      case ExprKind::kTest: {
        if (e.fn == nullptr) throw Error("No test named '" + e.name + "'.");
        Value v = eval(*e.args[0], scope);
        CallArgs a = eval_args(e, 1, scope);
        return Value(reinterpret_cast<TestFn>(const_cast<void*>(e.fn))(*this, v, a));
      }
      case ExprKind::kNot:
        return Value(!truthy(eval(*e.args[0], scope)));
      case ExprKind::kNeg:
        return negate(eval(*e.args[0], scope));
      case ExprKind::kPos: {
        Value v = eval(*e.args[0], scope);
        if (v.is_undefined()) fail_undefined(v);
        if (!v.is_number()) throw Error("bad operand type for unary +: '" + type_name(v) + "'");
        return v.is_bool() ? Value(v.as_int()) : v;
      }
      case ExprKind::kBinary: {
        Value a = eval(*e.args[0], scope);
        return binary_op(*this, e.name, a, eval(*e.args[1], scope));
      }
      case ExprKind::kAnd: {
        Value a = eval(*e.args[0], scope);
        return truthy(a) ? eval(*e.args[1], scope) : a;
      }
      case ExprKind::kOr: {
        Value a = eval(*e.args[0], scope);
        return truthy(a) ? a : eval(*e.args[1], scope);
      }
      case ExprKind::kCompare: {
        Value left = eval(*e.args[0], scope);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.args[i + 1], scope);
          const std::string& op = e.ops[i];
          bool ok;
          if (op == "==") ok = equals(left, right);
          else if (op == "!=") ok = !equals(left, right);
          else if (op == "in") ok = contains(right, left);
          else if (op == "notin") ok = !contains(right, left);
          else {
            const int c = compare(left, right, op);
            ok = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
          }
          if (!ok) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case ExprKind::kCond:
        if (truthy(eval(*e.args[1], scope))) return eval(*e.args[0], scope);
        if (e.args[2]) return eval(*e.args[2], scope);
        return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                " evaluated to false and no else section was defined.");
    }
    return Value();
  }

  std::string* out_;
  ScopePtr root_;
  std::unordered_map<std::string, Value> globals_;
  std::vector<std::weak_ptr<Dict>> namespaces_;
  int call_depth_ = 0;
};

std::string format_error(const Error& e) {
  if (e.line() == 0) return e.message();
  return "line " + std::to_string(e.line()) + ", column " + std::to_string(e.col()) + ": " + e.message();
}

Result<Value> from_json_at(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxValueDepth) return Status::error("JSON value nests too deeply");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) {
        auto v = from_json_at(e, depth + 1);
        if (!v.ok()) return v.status();
        items.push_back(std::move(*v));
      }
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto d = std::make_shared<Dict>();
      for (const auto& [k, e] : j.items()) {
        auto v = from_json_at(e, depth + 1);
        if (!v.ok()) return v.status();
        d->set(Value(k), std::move(*v));
      }
      return Value::dict(std::move(d));
    }
    default: return Status::error("unsupported JSON value");
  }
}

}  // namespace

Result<Template> Template::parse(std::string_view source) {
  try {
    Template t;
    t.body_ = std::make_shared<const Body>(parse_template(source));
    return t;
  } catch (const Error& e) {
    return Status::error("template syntax error: " + format_error(e));
  } catch (const std::exception& e) {
    return Status::error(std::string("template syntax error: ") + e.what());
  }
}

Result<std::string> Template::render(const Value& context, const RenderOptions& options) const {
  std::string out;
  try {
    Interpreter interp(options, &out);
    interp.run(*body_, context);
  } catch (const Error& e) {
    return Status::error("template error: " + format_error(e));
  } catch (const std::bad_alloc&) {
    return Status::error("template error: out of memory");
  } catch (const std::exception& e) {
    return Status::error(std::string("template error: ") + e.what());
  }
  return out;
}

Result<Value> value_from_json(const nlohmann::ordered_json& j) {
  try {
    return from_json_at(j, 0);
  } catch (const Error& e) {
    return Status::error(e.message());
  }
}

}  // namespace tessera::jinja
