// Syntax tree of a parsed template. One generic node type each for expressions and
// statements keeps the parser and interpreter small; the comments say which fields a kind
// uses.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/value.h"

namespace tessera::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind : uint8_t {
  kConst,    // value
  kName,     // name
  kList,     // args = elements
  kTuple,    // args = elements
  kDict,     // args = key0, value0, key1, value1, ...
  kGetAttr,  // args[0] . name
  kGetItem,  // args[0] [ args[1] ]
  kSlice,    // args[0] [ args[1] : args[2] : args[3] ] (missing parts are null)
  kCall,     // args[0] ( args[1..], kwargs, *dyn_args, **dyn_kwargs )
  kFilter,   // args[0] | name(args[1..], kwargs, ...); args[0] is null in filter blocks
  kTest,     // args[0] is name(args[1..], kwargs, ...)
  kNot,      // not args[0]
  kNeg,      // -args[0]
  kPos,      // +args[0]
  kBinary,   // args[0] op args[1]: + - * / // % ** ~
  kAnd,      // args[0] and args[1]
  kOr,       // args[0] or args[1]
  kCompare,  // args[0] ops[0] args[1] ops[1] args[2] ...: == != < <= > >= in notin
  kCond,     // args[0] if args[1] else args[2] (args[2] may be null)
};

struct Expr {
  ExprKind kind;
  int line = 0;
  int col = 0;
  int height = 1;                 // 1 + the tallest child, bounded by the parser
  Value value;                    // kConst
  std::string name;               // kName, kGetAttr, kFilter, kTest, kBinary (operator)
  std::vector<std::string> ops;   // kCompare
  std::vector<ExprPtr> args;      // see ExprKind
  std::vector<std::pair<std::string, ExprPtr>> kwargs;  // kCall, kFilter, kTest
  ExprPtr dyn_args;               // kCall, kFilter, kTest: `*iterable`, or null
  ExprPtr dyn_kwargs;             // kCall, kFilter, kTest: `**mapping`, or null
  const void* fn = nullptr;       // kFilter/kTest: resolved implementation, null if unknown
};

enum class StmtKind : uint8_t {
  kOutput,      // text
  kPrint,       // expr
  kIf,          // expr, body, else_body (elif = a single kIf in else_body)
  kFor,         // targets, expr (iterable), cond (filter), body, else_body
  kSet,         // targets (names) or ns_target.attr, expr
  kSetBlock,    // targets[0], body, filters (kFilter chain with null input, may be empty)
  kMacro,       // name, params, defaults, body
  kCallBlock,   // expr (the call), params/defaults (of caller), body
  kFilterBlock, // filters, body
  kWith,        // targets, values (expr list in `defaults`), body
  kBreak,
  kContinue,
  kGeneration,  // body (HF's AssistantTracker {% generation %}: renders its body)
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  int col = 0;
  std::string text;                   // kOutput
  std::string name;                   // kMacro; kSet with attribute: the namespace variable
  std::string attr;                   // kSet: the namespace attribute
  std::vector<std::string> targets;   // kFor, kSet, kSetBlock, kWith
  bool tuple_target = false;          // kFor, kSet: unpack into targets
  bool uses_loop = true;              // kFor: the body mentions `loop` (else it is not built)
  ExprPtr expr;
  ExprPtr cond;                       // kFor
  ExprPtr filters;                    // kSetBlock, kFilterBlock: innermost-first chain
  std::vector<std::string> params;    // kMacro, kCallBlock
  std::vector<ExprPtr> defaults;      // kMacro, kCallBlock (null = required); kWith values
  // kMacro, kCallBlock: the body reads `varargs` / `kwargs` / `caller` (not a parameter),
  // so calls may pass extra positional / keyword arguments / a caller (resolve.cc).
  bool catch_varargs = false;
  bool catch_kwargs = false;
  bool catch_caller = false;
  Body body;
  Body else_body;
};

}  // namespace tessera::jinja
