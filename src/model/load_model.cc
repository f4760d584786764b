#include <filesystem>

#include "loader/dtype_convert.h"
#include "loader/gguf.h"
#include "loader/safetensors.h"
#include "model/registry.h"

namespace tessera {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Result<std::unique_ptr<Model>> load_model(const std::string& path, std::optional<DType> float_weights) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) return Status::error(path + ": no such file or directory");
  ModelConfig config;
  std::shared_ptr<const WeightStore> store;
  WeightScheme scheme;
  if (ends_with(path, ".gguf")) {
    auto gguf = GgufFile::open(path);
    if (!gguf.ok()) return gguf.status();
    auto c = model_config_from_gguf(**gguf);
    if (!c.ok()) return c.status();
    config = std::move(*c);
    store = std::shared_ptr<const WeightStore>(std::move(*gguf));
    scheme = WeightScheme::kGguf;
  } else {
    const std::string config_path = fs::is_directory(path, ec)
                                        ? path
                                        : fs::path(path).parent_path().string();
    auto c = load_hf_config(config_path.empty() ? "." : config_path);
    if (!c.ok()) return c.status();
    auto st = open_safetensors(path);
    if (!st.ok()) return st.status();
    config = std::move(*c);
    store = std::shared_ptr<const WeightStore>(std::move(*st));
    scheme = WeightScheme::kHuggingFace;
  }
  if (float_weights) store = convert_float_weights(std::move(store), *float_weights);
  ModelBuilder builder = find_model_builder(config.architecture);
  if (builder == nullptr) {
    return Status::error(path + ": no builder for architecture '" + config.architecture + "'");
  }
  return builder(std::move(config), std::move(store), scheme);
}

}  // namespace tessera
