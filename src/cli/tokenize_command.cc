// `tessera tokenize` and `tessera detokenize`: text <-> token ids with any tokenizer
// load_tokenizer() understands (tokenizer.json, model directory, .gguf, SentencePiece
// .model). With --jsonl, one JSON object per stdin line in, one per line out, flushed; a bad
// line gets {"error": ...} and the rest go on.
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "tokenizer/tokenizer.h"

namespace tessera::cli {
namespace {

using tokenizer::TokenId;
using tokenizer::Tokenizer;

struct TokenizeOptions {
  std::string tokenizer;
  bool special = false;  // --add-special-tokens / --skip-special-tokens
  bool jsonl = false;
};

void print_line(const nlohmann::json& j) {
  std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n' << std::flush;
}

nlohmann::json error_json(const std::string& message) { return {{"error", message}}; }

Result<std::unique_ptr<Tokenizer>> open_tokenizer(const std::string& path) {
  auto tok = tokenizer::load_tokenizer(path);
  if (!tok.ok()) std::cerr << "error: " << tok.error() << "\n";
  return tok;
}

nlohmann::json tokenize_line(const Tokenizer& tok, const std::string& line, bool add_special) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return error_json("not a JSON object (or not valid UTF-8)");
  auto it = j.find("text");
  if (it == j.end() || !it->is_string()) return error_json("expected {\"text\": string}");
  auto ids = tok.encode(it->get_ref<const std::string&>(), add_special);
  if (!ids.ok()) return error_json(ids.error());
  return {{"ids", *ids}};
}

Result<std::vector<TokenId>> parse_ids(const nlohmann::json& arr) {
  std::vector<TokenId> ids;
  for (const auto& v : arr) {
    if (!v.is_number_integer()) return Status::error("ids must be integers");
    const int64_t x = v.get<int64_t>();
    if (x < 0 || x > INT32_MAX) return Status::error("token id " + std::to_string(x) + " is out of range");
    ids.push_back(static_cast<TokenId>(x));
  }
  return ids;
}

nlohmann::json detokenize_line(const Tokenizer& tok, const std::string& line, bool skip_special) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return error_json("not a JSON object");
  auto it = j.find("ids");
  if (it == j.end() || !it->is_array()) return error_json("expected {\"ids\": [integers]}");
  auto ids = parse_ids(*it);
  if (!ids.ok()) return error_json(ids.error());
  auto text = tok.decode(*ids, skip_special);
  if (!text.ok()) return error_json(text.error());
  return {{"text", *text}};
}

int run_tokenize(const TokenizeOptions& o) {
  auto tok = open_tokenizer(o.tokenizer);
  if (!tok.ok()) return 1;
  if (o.jsonl) {
    std::string line;
    while (std::getline(std::cin, line)) print_line(tokenize_line(**tok, line, o.special));
    return 0;
  }
  // Whole stdin is one text.
  const std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  auto ids = (*tok)->encode(text, o.special);
  if (!ids.ok()) {
    std::cerr << "error: " << ids.error() << "\n";
    return 1;
  }
  print_line({{"ids", *ids}});
  return 0;
}

int run_detokenize(const TokenizeOptions& o) {
  auto tok = open_tokenizer(o.tokenizer);
  if (!tok.ok()) return 1;
  if (o.jsonl) {
    std::string line;
    while (std::getline(std::cin, line)) print_line(detokenize_line(**tok, line, o.special));
    return 0;
  }
  // Whole stdin is whitespace-separated ids; the text is printed as it is.
  std::vector<TokenId> ids;
  int64_t x = 0;
  while (std::cin >> x) {
    if (x < 0 || x > INT32_MAX) {
      std::cerr << "error: token id " << x << " is out of range\n";
      return 1;
    }
    ids.push_back(static_cast<TokenId>(x));
  }
  if (!std::cin.eof()) {
    std::cerr << "error: stdin must hold whitespace-separated token ids\n";
    return 1;
  }
  auto text = (*tok)->decode(ids, o.special);
  if (!text.ok()) {
    std::cerr << "error: " << text.error() << "\n";
    return 1;
  }
  std::cout << *text << std::flush;
  return 0;
}

}  // namespace

void add_tokenize_commands(CLI::App& app, int* exit_code) {
  auto t = std::make_shared<TokenizeOptions>();
  CLI::App* tok = app.add_subcommand("tokenize", "Text to token ids");
  tok->add_option("--tokenizer", t->tokenizer, "tokenizer.json, model directory, .gguf or SentencePiece .model")
      ->required();
  tok->add_flag("--add-special-tokens", t->special, "Add BOS/EOS as the tokenizer's post-processor does");
  tok->add_flag("--jsonl", t->jsonl, "stdin lines {\"text\": ...} -> stdout lines {\"ids\": [...]}");
  tok->callback([t, exit_code] { *exit_code = run_tokenize(*t); });

  auto d = std::make_shared<TokenizeOptions>();
  CLI::App* detok = app.add_subcommand("detokenize", "Token ids to text");
  detok->add_option("--tokenizer", d->tokenizer, "tokenizer.json, model directory, .gguf or SentencePiece .model")
      ->required();
  detok->add_flag("--skip-special-tokens", d->special, "Leave out special tokens");
  detok->add_flag("--jsonl", d->jsonl, "stdin lines {\"ids\": [...]} -> stdout lines {\"text\": ...}");
  detok->callback([d, exit_code] { *exit_code = run_detokenize(*d); });
}

}  // namespace tessera::cli
