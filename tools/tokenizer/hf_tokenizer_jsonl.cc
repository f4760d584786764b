// JSONL driver for HfTokenizer, used by tools/reference/tokenizer_diff.py.
//   hf_tokenizer_jsonl TOKENIZER_JSON_OR_DIR < requests.jsonl > replies.jsonl
// Each request line gets exactly one reply line:
//   {"op": "encode", "text": "...", "add_special_tokens": true}  -> {"ids": [...]}
//   {"op": "decode", "ids": [...], "skip_special_tokens": false} -> {"text": "..."}
// Failures reply {"error": "..."}; a request that is not JSON ends the run with status 2.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/hf_tokenizer.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TOKENIZER_JSON_OR_DIR < requests.jsonl\n", argv[0]);
    return 2;
  }
  auto tok = tessera::tokenizer::HfTokenizer::load(argv[1]);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", tok.error().c_str());
    return 1;
  }
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    const nlohmann::json req = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!req.is_object()) {
      std::fprintf(stderr, "bad request line: %s\n", line.c_str());
      return 2;
    }
    nlohmann::json reply;
    const std::string op = req.value("op", "encode");
    if (op == "encode") {
      auto ids = (*tok)->encode(req.value("text", ""), req.value("add_special_tokens", false));
      if (ids.ok()) {
        reply["ids"] = *ids;
      } else {
        reply["error"] = ids.error();
      }
    } else if (op == "decode") {
      const std::vector<tessera::tokenizer::TokenId> ids =
          req.value("ids", std::vector<tessera::tokenizer::TokenId>{});
      auto text = (*tok)->decode(ids, req.value("skip_special_tokens", false));
      if (text.ok()) {
        reply["text"] = *text;
      } else {
        reply["error"] = text.error();
      }
    } else {
      reply["error"] = "unknown op '" + op + "'";
    }
    std::cout << reply.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) << '\n';
  }
  std::cout.flush();
  return 0;
}
