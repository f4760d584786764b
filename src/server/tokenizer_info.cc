#include "server/tokenizer_info.h"

#include <fstream>

#include "tokenizer/json_fields.h"

namespace tessera::server {
namespace {

using Json = nlohmann::ordered_json;

// transformers' AddedToken ({"content": ...}) as the text it stands for; other values as they are.
Json token_text(const Json& v) {
  auto text = tokenizer::json_fields::added_token_text(v);
  return text ? Json(*text) : v;
}

}  // namespace

Json tokenizer_info(const std::string& config_path, const tokenizer::Tokenizer* tok, const ChatTemplate* chat_template) {
  Json info = Json::object();
  if (!config_path.empty()) {
    std::ifstream in(config_path);
    Json file = Json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (file.is_object()) info = std::move(file);
  }
  info.erase("vocab_file");
  info.erase("merges_file");
  for (auto& [key, value] : info.items()) {
    if (key == "added_tokens_decoder" && value.is_object()) {
      for (auto& [id, token] : value.items()) token = token_text(token);
    } else {
      value = token_text(value);
    }
  }
  if (tok != nullptr) {
    const tokenizer::SpecialTokens& s = tok->special_tokens();
    if (!info.contains("bos_token") && !s.bos_token.empty()) info["bos_token"] = s.bos_token;
    if (!info.contains("eos_token") && !s.eos_token.empty()) info["eos_token"] = s.eos_token;
  }
  // AutoTokenizer loads the fast variant of the configured class.
  std::string cls = info.value("tokenizer_class", std::string("PreTrainedTokenizerFast"));
  if (cls.size() < 4 || cls.compare(cls.size() - 4, 4, "Fast") != 0) cls += "Fast";
  info["tokenizer_class"] = cls;
  if (chat_template != nullptr) info["chat_template"] = chat_template->source();
  return info;
}

}  // namespace tessera::server
