// Helpers for the tokenizer tests: llama.cpp's .inp/.out vocabulary vectors and data paths.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "tokenizer/tokenizer.h"

namespace tessera::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string llamacpp_vocab_dir() { return shared_data() + "/tokenizer-tests/llamacpp-vocab"; }

struct VocabCase {
  std::string text;
  std::vector<tokenizer::TokenId> ids;
};

// <name>.inp holds the texts separated by "\n__ggml_vocab_test__\n" (the last one followed
// by it too); <name>.out has one line of space-separated ids per text.
inline std::vector<VocabCase> read_vocab_cases(const std::string& inp_path, const std::string& out_path) {
  const std::string inp = read_file(inp_path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  size_t pos = 0;
  while (true) {
    const size_t hit = inp.find(sep, pos);
    if (hit == std::string::npos) break;
    texts.push_back(inp.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  std::ifstream out(out_path);
  std::vector<VocabCase> cases;
  std::string line;
  for (const std::string& t : texts) {
    if (!std::getline(out, line)) break;
    VocabCase c{t, {}};
    std::istringstream ls(line);
    tokenizer::TokenId id = 0;
    while (ls >> id) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  return cases;
}

inline std::string ids_string(const std::vector<tokenizer::TokenId>& ids) {
  std::string s;
  for (auto id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

}  // namespace tessera::testing
