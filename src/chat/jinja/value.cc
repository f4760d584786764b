#include "chat/jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "chat/jinja/text.h"

namespace tessera::jinja {
namespace {

// Containers nest at most this deep in repr/==/hash; deeper means a namespace that holds
// itself, which Python would also refuse (RecursionError).
constexpr int kMaxNesting = 256;

void check_depth(int depth) {
  if (depth > kMaxNesting) throw Error("maximum recursion depth exceeded while comparing or printing a value");
}

void append_repr(std::string& out, const Value& v, int depth);

void append_dict_body(std::string& out, const Dict& d, int depth) {
  out += '{';
  bool first = true;
  for (const auto& [k, val] : d.entries()) {
    if (!first) out += ", ";
    first = false;
    append_repr(out, k, depth + 1);
    out += ": ";
    append_repr(out, val, depth + 1);
  }
  out += '}';
}

void append_repr(std::string& out, const Value& v, int depth) {
  check_depth(depth);
  switch (v.kind()) {
    case Kind::kString:
      out += py_repr_string(v.str());
      return;
    case Kind::kList: {
      const List& l = v.list();
      if (l.is_generator) {
        out += "<generator object>";
        return;
      }
      out += l.is_tuple ? '(' : '[';
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i > 0) out += ", ";
        append_repr(out, l.items[i], depth + 1);
      }
      if (l.is_tuple && l.items.size() == 1) out += ',';
      out += l.is_tuple ? ')' : ']';
      return;
    }
    case Kind::kDict:
      if (v.dict().is_namespace) {
        out += "<Namespace ";
        append_dict_body(out, v.dict(), depth);
        out += '>';
      } else {
        append_dict_body(out, v.dict(), depth);
      }
      return;
    default:
      append_str(out, v);
  }
}

bool equals_at(const Value& a, const Value& b, int depth) {
  check_depth(depth);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return a.str() == b.str();
    case Kind::kList: {
      const List& x = a.list();
      const List& y = b.list();
      if (x.is_generator || y.is_generator) return &x == &y;
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!equals_at(x.items[i], y.items[i], depth + 1)) return false;
      }
      return true;
    }
    case Kind::kDict: {
      const Dict& x = a.dict();
      const Dict& y = b.dict();
      if (x.is_namespace || y.is_namespace) return &x == &y;
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.entries()) {
        const Value* other = y.find(k);
        if (other == nullptr || !equals_at(v, *other, depth + 1)) return false;
      }
      return true;
    }
    case Kind::kFunction:
      return &a.function() == &b.function();
    default:
      return false;
  }
}

std::string hash_key_at(const Value& v, int depth) {
  check_depth(depth);
  switch (v.kind()) {
    case Kind::kNone: return "N";
    case Kind::kBool:
    case Kind::kInt: return "i" + std::to_string(v.as_int());
    case Kind::kFloat: {
      const double d = v.as_double();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
        return "i" + std::to_string(static_cast<int64_t>(d));
      }
      return "f" + py_repr_float(d);
    }
    case Kind::kString: return "s" + v.str();
    case Kind::kList:
      if (v.list().is_tuple && !v.list().is_generator) {
        std::string k = "t(";
        for (const Value& e : v.list().items) {
          std::string ek = hash_key_at(e, depth + 1);
          k += std::to_string(ek.size()) + ":" + ek;
        }
        return k + ")";
      }
      break;
    case Kind::kFunction: return "F" + std::to_string(reinterpret_cast<uintptr_t>(&v.function()));
    default: break;
  }
  throw Error("unhashable type: '" + type_name(v) + "'");
}

}  // namespace

Value::Value(std::string s) : kind_(Kind::kString), ptr_(std::make_shared<std::string>(std::move(s))) {}

Value Value::undefined(std::string hint) {
  Value v;
  v.ptr_ = std::make_shared<std::string>(std::move(hint));
  return v;
}

Value Value::list(std::vector<Value> items, bool is_tuple) {
  Value v;
  v.kind_ = Kind::kList;
  auto l = std::make_shared<List>();
  for (const Value& e : items) l->depth = std::max(l->depth, value_depth(e) + 1);
  if (l->depth > kMaxValueDepth) throw Error("values nest too deeply");
  l->items = std::move(items);
  l->is_tuple = is_tuple;
  v.ptr_ = std::move(l);
  return v;
}

Value Value::generator(std::vector<Value> items) {
  Value v = list(std::move(items));
  static_cast<List*>(v.ptr_.get())->is_generator = true;
  return v;
}

Value Value::dict(std::shared_ptr<Dict> d) {
  Value v;
  v.kind_ = Kind::kDict;
  v.ptr_ = std::move(d);
  return v;
}

Value Value::function(std::shared_ptr<Function> f) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.ptr_ = std::move(f);
  return v;
}

std::string Value::undefined_message() const {
  if (kind_ == Kind::kUndefined && ptr_) return *static_cast<const std::string*>(ptr_.get());
  return "value is undefined";
}

void fail_undefined(const Value& v) { throw Error(v.undefined_message()); }

const Value* Dict::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.str()));
  auto it = index_.find(hash_key(key));
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

const Value* Dict::find(std::string_view key) const {
  std::string k;
  k.reserve(key.size() + 1);
  k += 's';
  k += key;
  auto it = index_.find(k);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

void Dict::set(const Value& key, Value value) {
  depth_ = std::max(depth_, value_depth(value) + 1);
  if (depth_ > kMaxValueDepth) throw Error("values nest too deeply");
  std::string k = hash_key(key);
  auto [it, inserted] = index_.emplace(std::move(k), entries_.size());
  if (inserted) {
    entries_.emplace_back(key, std::move(value));
  } else {
    entries_[it->second].second = std::move(value);
  }
}

void Dict::clear() {
  entries_.clear();
  index_.clear();
  depth_ = 1;
}

int value_depth(const Value& v) {
  if (v.is_list()) return v.list().depth;
  if (v.is_dict()) return v.dict().depth();
  return 0;
}

std::vector<std::optional<Value>> bind_args(const CallArgs& a,
                                            std::initializer_list<std::string_view> params,
                                            std::string_view fn_name) {
  std::vector<std::optional<Value>> out(params.size());
  if (a.args.size() > params.size()) {
    throw Error(std::string(fn_name) + "() takes at most " + std::to_string(params.size()) +
                " arguments (" + std::to_string(a.args.size()) + " given)");
  }
  for (size_t i = 0; i < a.args.size(); ++i) out[i] = a.args[i];
  for (const auto& [name, v] : a.kwargs) {
    size_t idx = 0;
    for (std::string_view p : params) {
      if (p == name) break;
      ++idx;
    }
    if (idx == params.size()) {
      throw Error(std::string(fn_name) + "() got an unexpected keyword argument '" + name + "'");
    }
    if (out[idx]) throw Error(std::string(fn_name) + "() got multiple values for argument '" + name + "'");
    out[idx] = v;
  }
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return v.list().is_generator ? "generator" : (v.list().is_tuple ? "tuple" : "list");
    case Kind::kDict: return v.dict().is_namespace ? "Namespace" : "dict";
    case Kind::kFunction: return "function";
  }
  return "object";
}

void append_str(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return;
    case Kind::kNone: out += "None"; return;
    case Kind::kBool: out += v.as_bool() ? "True" : "False"; return;
    case Kind::kInt: out += std::to_string(v.as_int()); return;
    case Kind::kFloat: out += py_repr_float(v.as_double()); return;
    case Kind::kString: out += v.str(); return;
    case Kind::kFunction:
      out += v.function().is_macro ? "<Macro '" + v.function().name + "'>"
                                   : "<built-in function " + v.function().name + ">";
      return;
    default: append_repr(out, v, 0);
  }
}

std::string to_str(const Value& v) {
  if (v.is_string()) return v.str();
  std::string s;
  append_str(s, v);
  return s;
}

std::string repr(const Value& v) {
  std::string s;
  append_repr(s, v, 0);
  return s;
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool:
    case Kind::kInt: return v.as_int() != 0;
    case Kind::kFloat: return v.as_double() != 0.0;
    case Kind::kString: return !v.str().empty();
    case Kind::kList: return v.list().is_generator || !v.list().items.empty();
    case Kind::kDict: return v.dict().is_namespace || v.dict().size() > 0;
    case Kind::kFunction: return true;
  }
  return false;
}

bool equals(const Value& a, const Value& b) { return equals_at(a, b, 0); }

int compare(const Value& a, const Value& b, std::string_view op) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order is code point order.
    const int c = a.str().compare(b.str());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple() && !a.is_generator() && !b.is_generator()) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return compare(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  throw Error("'" + std::string(op) + "' not supported between instances of '" + type_name(a) +
              "' and '" + type_name(b) + "'");
}

std::string hash_key(const Value& v) { return hash_key_at(v, 0); }

std::optional<int64_t> length(const Value& v) {
  switch (v.kind()) {
    case Kind::kString: return static_cast<int64_t>(count_code_points(v.str()));
    case Kind::kList:
      if (v.list().is_generator) return std::nullopt;
      return static_cast<int64_t>(v.list().items.size());
    case Kind::kDict:
      if (v.dict().is_namespace) return std::nullopt;
      return static_cast<int64_t>(v.dict().size());
    case Kind::kUndefined: return 0;
    default: return std::nullopt;
  }
}

}  // namespace tessera::jinja
