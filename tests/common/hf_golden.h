// Where the model of a transformers golden (tools/reference/hf_greedy_reference.py) lives.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "common/test_paths.h"

namespace tessera::testing {

// The golden's "source": a file or dir, relative to the repository or absolute (goldens
// made at run time), or the default model for SmolLM2-135M-Instruct.
inline std::string golden_model_path(const nlohmann::json& source) {
  namespace fs = std::filesystem;
  const fs::path repo = fs::path(test_data()) / ".." / "..";
  const bool is_file = source.contains("file");
  const std::string p = source[is_file ? "file" : "dir"].get<std::string>();
  if (is_file && p.find("SmolLM2-135M-Instruct") != std::string::npos) return default_model();
  return fs::path(p).is_absolute() ? p : (repo / p).string();
}

}  // namespace tessera::testing
