#include "tokenizer/post_processors.h"

#include <map>
#include <string>

#include "tokenizer/json_fields.h"

namespace tessera::tokenizer {
namespace {

namespace jf = json_fields;

// A template is a list of items: the sequence ($A) or a special token's ids.
class TemplateProcessing final : public PostProcessor {
 public:
  struct Item {
    bool is_sequence;
    std::vector<TokenId> ids;
  };
  explicit TemplateProcessing(std::vector<Item> items) : items_(std::move(items)) {}
  void process(std::vector<TokenId>* ids, bool add_special_tokens) const override {
    if (!add_special_tokens) return;
    std::vector<TokenId> out;
    out.reserve(ids->size() + 8);
    for (const Item& it : items_) {
      if (it.is_sequence) {
        out.insert(out.end(), ids->begin(), ids->end());
      } else {
        out.insert(out.end(), it.ids.begin(), it.ids.end());
      }
    }
    *ids = std::move(out);
  }

 private:
  std::vector<Item> items_;
};

class Wrap final : public PostProcessor {  // Bert/Roberta: cls + A + sep
 public:
  Wrap(TokenId cls, TokenId sep) : cls_(cls), sep_(sep) {}
  void process(std::vector<TokenId>* ids, bool add_special_tokens) const override {
    if (!add_special_tokens) return;
    ids->insert(ids->begin(), cls_);
    ids->push_back(sep_);
  }

 private:
  TokenId cls_, sep_;
};

class NoOp final : public PostProcessor {
 public:
  void process(std::vector<TokenId>*, bool) const override {}
};

class SequenceProcessor final : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> parts)
      : parts_(std::move(parts)) {}
  void process(std::vector<TokenId>* ids, bool add_special_tokens) const override {
    for (const auto& p : parts_) p->process(ids, add_special_tokens);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

Result<TokenId> checked_id(const nlohmann::json& v, const std::string& what) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
    return Status::error(what + ": token ids must be non-negative integers");
  }
  return static_cast<TokenId>(v.get<int64_t>());
}

// ["[CLS]", 101]
Result<TokenId> pair_id(const nlohmann::json& j, const char* key, const std::string& what) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_string()) {
    return Status::error(what + ": field '" + key + "' must be [token, id]");
  }
  return checked_id((*it)[1], what);
}

// One template piece, in object form {"SpecialToken": {"id": ...}} / {"Sequence": {...}} or
// the string form "$A", "$B:1", "[CLS]", "[SEP]:1".
Result<TemplateProcessing::Item> parse_item(
    const nlohmann::json& piece, const std::map<std::string, std::vector<TokenId>>& specials,
    const std::string& what) {
  std::string special;
  if (piece.is_string()) {
    std::string s = piece.get<std::string>();
    const size_t colon = s.rfind(':');
    if (colon != std::string::npos) s = s.substr(0, colon);
    if (!s.empty() && s[0] == '$') return TemplateProcessing::Item{true, {}};
    special = s;
  } else if (piece.is_object() && piece.size() == 1) {
    const auto it = piece.begin();
    if (it.key() == "Sequence") return TemplateProcessing::Item{true, {}};
    if (it.key() != "SpecialToken" || !it.value().is_object() || !it.value().contains("id") ||
        !it.value()["id"].is_string()) {
      return Status::error(what + ": bad template piece " + piece.dump());
    }
    special = it.value()["id"].get<std::string>();
  } else {
    return Status::error(what + ": bad template piece " + piece.dump());
  }
  auto found = specials.find(special);
  if (found == specials.end()) {
    return Status::error(what + ": template uses special token '" + special +
                         "' missing from special_tokens");
  }
  return TemplateProcessing::Item{false, found->second};
}

Result<std::unique_ptr<PostProcessor>> make(const nlohmann::json& j, int depth) {
  if (depth > 32) return Status::error("post_processor: Sequence nested too deeply");
  auto type = jf::component_type(j, "post_processor");
  if (!type.ok()) return type.status();
  const std::string& t = *type;
  const std::string what = "post_processor " + t;
  using Ptr = std::unique_ptr<PostProcessor>;
  if (t == "ByteLevel") return Ptr(new NoOp());
  if (t == "BertProcessing" || t == "RobertaProcessing") {
    auto sep = pair_id(j, "sep", what);
    if (!sep.ok()) return sep.status();
    auto cls = pair_id(j, "cls", what);
    if (!cls.ok()) return cls.status();
    return Ptr(new Wrap(*cls, *sep));
  }
  if (t == "TemplateProcessing") {
    std::map<std::string, std::vector<TokenId>> specials;
    if (j.contains("special_tokens")) {
      const auto& st = j["special_tokens"];
      if (!st.is_object()) return Status::error(what + ": special_tokens must be an object");
      for (const auto& [name, tok] : st.items()) {
        if (!tok.is_object() || !tok.contains("ids") || !tok["ids"].is_array()) {
          return Status::error(what + ": special token '" + name + "' needs an ids array");
        }
        std::vector<TokenId> ids;
        for (const auto& v : tok["ids"]) {
          auto id = checked_id(v, what);
          if (!id.ok()) return id.status();
          ids.push_back(*id);
        }
        // The map is keyed by each entry's "id" string (normally equal to the key).
        std::string key = name;
        if (tok.contains("id") && tok["id"].is_string()) key = tok["id"].get<std::string>();
        specials[key] = std::move(ids);
      }
    }
    nlohmann::json single = j.contains("single") ? j["single"] : nlohmann::json();
    if (single.is_string()) {  // "[CLS] $A [SEP]"
      nlohmann::json parts = nlohmann::json::array();
      const std::string s = single.get<std::string>();
      size_t pos = 0;
      while (pos < s.size()) {
        const size_t sp = s.find(' ', pos);
        const std::string word = s.substr(pos, sp == std::string::npos ? std::string::npos : sp - pos);
        if (!word.empty()) parts.push_back(word);
        if (sp == std::string::npos) break;
        pos = sp + 1;
      }
      single = parts;
    }
    if (!single.is_array()) return Status::error(what + ": field 'single' must be a template");
    std::vector<TemplateProcessing::Item> items;
    for (const auto& piece : single) {
      auto item = parse_item(piece, specials, what);
      if (!item.ok()) return item.status();
      items.push_back(std::move(*item));
    }
    return Ptr(new TemplateProcessing(std::move(items)));
  }
  if (t == "Sequence") {
    auto it = j.find("processors");
    if (it == j.end() || !it->is_array()) {
      return Status::error("post_processor Sequence: field 'processors' must be an array");
    }
    std::vector<Ptr> parts;
    for (const auto& child : *it) {
      auto p = make(child, depth + 1);
      if (!p.ok()) return p.status();
      parts.push_back(std::move(*p));
    }
    return Ptr(new SequenceProcessor(std::move(parts)));
  }
  return Status::error("unsupported post_processor type '" + t + "'");
}

}  // namespace

Result<std::unique_ptr<PostProcessor>> make_post_processor(const nlohmann::json& j) {
  if (j.is_null()) return std::unique_ptr<PostProcessor>();
  return make(j, 0);
}

}  // namespace tessera::tokenizer
