#include "tokenizer/hf_tokenizer.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tokenizer/hf_json.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/unicode.h"

namespace tessera::tokenizer {
namespace {

namespace fs = std::filesystem;

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open");
  std::string data;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) return Status::error(path + ": cannot read");
  data.resize(static_cast<size_t>(size));
  in.seekg(0, std::ios::beg);
  in.read(data.data(), size);
  if (in.gcount() != size) return Status::error(path + ": short read");
  return data;
}

}  // namespace

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::load(const std::string& path) {
  std::error_code ec;
  fs::path file = path;
  if (fs::is_directory(file, ec)) file /= "tokenizer.json";
  auto text = read_file(file.string());
  if (!text.ok()) return text.status();
  std::string config;
  const fs::path config_path = file.parent_path() / "tokenizer_config.json";
  if (fs::exists(config_path, ec)) {
    auto c = read_file(config_path.string());
    if (!c.ok()) return c.status();
    config = std::move(*c);
  }
  auto tok = from_json(*text, config);
  if (!tok.ok()) return Status::error(file.string() + ": " + tok.error());
  return tok;
}

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::from_json(std::string_view tokenizer_json,
                                                            std::string_view config_json) {
  auto parsed = parse_tokenizer_json(tokenizer_json);
  if (!parsed.ok()) return parsed.status();
  TokenizerJson& doc = *parsed;
  const nlohmann::json& root = doc.root;
  auto field = [&](const char* key) -> const nlohmann::json& {
    static const nlohmann::json kNull;
    auto it = root.find(key);
    return it == root.end() ? kNull : *it;
  };
  if (const auto& v = field("version"); !v.is_null() && (!v.is_string() || v != "1.0")) {
    return Status::error("unknown tokenizer.json version " + v.dump());
  }
  std::unique_ptr<HfTokenizer> t(new HfTokenizer());

  auto normalizer = make_normalizer(field("normalizer"));
  if (!normalizer.ok()) return normalizer.status();
  t->normalizer_ = std::move(*normalizer);
  auto pre = make_pre_tokenizer(field("pre_tokenizer"));
  if (!pre.ok()) return pre.status();
  t->pre_tokenizer_ = std::move(*pre);
  auto post = make_post_processor(field("post_processor"));
  if (!post.ok()) return post.status();
  t->post_processor_ = std::move(*post);
  auto decoder = make_decoder(field("decoder"));
  if (!decoder.ok()) return decoder.status();
  t->decoder_ = std::move(*decoder);

  const nlohmann::json& model = field("model");
  if (!model.is_object()) return Status::error("field 'model' must be an object");
  // Old files have no model type; they are BPE when they carry merges.
  std::string type = "BPE";
  if (auto it = model.find("type"); it != model.end()) {
    if (!it->is_string()) return Status::error("model: field 'type' must be a string");
    type = it->get<std::string>();
  }
  if (type != "BPE") return Status::error("unsupported model type '" + type + "' (only BPE)");
  auto bpe = BpeModel::load(&doc, model);
  if (!bpe.ok()) return bpe.status();
  t->model_ = std::move(*bpe);

  auto added = AddedVocabulary::build(field("added_tokens"), *t->model_, t->normalizer_.get());
  if (!added.ok()) return added.status();
  t->added_ = std::move(*added);

  if (t->pre_tokenizer_ != nullptr && t->pre_tokenizer_->ends_with_byte_level() &&
      t->model_->enable_raw_bytes()) {
    t->pre_tokenizer_->set_raw_byte_output();
    t->raw_bytes_ = true;
  }

  // The id -> piece table: added tokens shadow model tokens, as in HF's id_to_token.
  const TokenId max_id = std::max(t->model_->max_id(), t->added_.max_id());
  t->pieces_.assign(static_cast<size_t>(max_id + 1), Piece{});
  for (TokenId id = 0; id <= max_id; ++id) {
    Piece& p = t->pieces_[static_cast<size_t>(id)];
    if (const AddedToken* a = t->added_.token(id)) {
      p.text = *t->added_.decode_text(id);
      p.present = true;
      p.special_added = a->special;
    } else if (auto m = t->model_->id_to_token(id)) {
      p.text = *m;
      p.present = true;
    }
    p.special_content = p.present && t->added_.is_special_content(p.text);
  }
  TESSERA_RETURN_IF_ERROR(t->load_config(config_json));
  return t;
}

Status HfTokenizer::load_config(std::string_view config_json) {
  nlohmann::json config = nlohmann::json::object();
  if (!config_json.empty()) {
    auto parsed = parse_json(config_json);
    if (!parsed.ok()) return Status::error("tokenizer_config.json: " + parsed.error());
    if (parsed->is_object()) config = std::move(*parsed);
  }
  auto resolve = [&](const char* key, std::optional<std::string> fallback, std::string* text,
                     std::optional<TokenId>* id) {
    std::optional<std::string> name = json_fields::config_token(config, key);
    if (!name && !config.contains(key)) name = std::move(fallback);
    if (!name) return;
    *id = token_to_id(*name);
    if (*id && text != nullptr) *text = *name;
  };
  resolve("bos_token", std::nullopt, &special_.bos_token, &special_.bos_id);
  resolve("eos_token", std::nullopt, &special_.eos_token, &special_.eos_id);
  resolve("pad_token", std::nullopt, nullptr, &special_.pad_id);
  resolve("unk_token", model_->unk_token(), nullptr, &special_.unk_id);
  return Status();
}

Status HfTokenizer::encode_normalized(std::string_view text, bool at_origin,
                                      std::vector<TokenId>* ids) const {
  if (text.empty()) return Status();
  if (pre_tokenizer_ == nullptr) return model_->tokenize(text, ids);
  return pre_tokenizer_->pre_tokenize(
      PreToken{text, at_origin}, [&](const PreToken& p) { return model_->tokenize(p.text, ids); });
}

Status HfTokenizer::encode_segment(std::string_view segment, bool at_origin,
                                   std::vector<TokenId>* ids) const {
  std::string normalized;
  std::string_view text = segment;
  if (normalizer_ != nullptr) {
    normalized.assign(segment);
    TESSERA_RETURN_IF_ERROR(normalizer_->normalize(&normalized));
    text = normalized;
  }
  if (!added_.has_tokens(/*normalized_set=*/true)) return encode_normalized(text, at_origin, ids);
  std::vector<AddedVocabulary::Segment> parts;
  added_.split(text, /*normalized_set=*/true, &parts);
  for (const auto& p : parts) {
    if (p.id >= 0) {
      ids->push_back(p.id);
    } else {
      TESSERA_RETURN_IF_ERROR(encode_normalized(text.substr(p.start, p.end - p.start),
                                                at_origin && p.start == 0, ids));
    }
  }
  return Status();
}

Result<std::vector<TokenId>> HfTokenizer::encode(std::string_view text,
                                                 bool add_special_tokens) const {
  const size_t valid = unicode::valid_utf8_prefix(text);
  if (valid != text.size()) {
    return Status::error("encode: input is not valid UTF-8 (at byte " + std::to_string(valid) + ")");
  }
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 4 + 4);
  if (!added_.has_tokens(/*normalized_set=*/false)) {
    TESSERA_RETURN_IF_ERROR(encode_segment(text, true, &ids));
  } else {
    std::vector<AddedVocabulary::Segment> parts;
    added_.split(text, /*normalized_set=*/false, &parts);
    for (const auto& p : parts) {
      if (p.id >= 0) {
        ids.push_back(p.id);
      } else {
        TESSERA_RETURN_IF_ERROR(
            encode_segment(text.substr(p.start, p.end - p.start), p.start == 0, &ids));
      }
    }
  }
  if (post_processor_ != nullptr) post_processor_->process(&ids, add_special_tokens);
  return ids;
}

Result<std::string> HfTokenizer::decode(std::span<const TokenId> ids,
                                        bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (TokenId id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) {
      return Status::error("decode: token id " + std::to_string(id) + " is out of range");
    }
    const Piece& p = pieces_[static_cast<size_t>(id)];
    if (!p.present) continue;  // a hole in the id space: HF skips it
    if (skip_special_tokens && p.special_content) continue;
    tokens.emplace_back(p.text);
  }
  std::string out;
  if (decoder_ == nullptr) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) out.push_back(' ');
      out += tokens[i];
    }
    return out;
  }
  TESSERA_RETURN_IF_ERROR(decoder_->decode_chain(&tokens));
  for (const auto& t : tokens) out += t;
  return out;
}

std::optional<std::string> HfTokenizer::id_to_token(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= pieces_.size() || !pieces_[id].present) {
    return std::nullopt;
  }
  return std::string(pieces_[static_cast<size_t>(id)].text);
}

std::optional<TokenId> HfTokenizer::token_to_id(std::string_view token) const {
  if (auto id = added_.token_to_id(token)) return id;
  return model_->token_to_id(token);
}

bool HfTokenizer::is_special(TokenId id) const {
  return id >= 0 && static_cast<size_t>(id) < pieces_.size() && pieces_[id].special_added;
}

}  // namespace tessera::tokenizer
