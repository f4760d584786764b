// Helpers shared by the HfTokenizer tests.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "common/test_paths.h"

namespace tessera::tokenizer::testing {

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string hf_tokenizer_dir(const std::string& name) {
  return tessera::testing::shared_data() + "/tokenizers/" + name;
}

}  // namespace tessera::tokenizer::testing
