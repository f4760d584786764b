#include "engine/engine_setup.h"

#include <filesystem>

namespace tessera {

EngineConfig engine_config_from(const EngineArgs& args) {
  EngineConfig config;
  config.block_size = args.block_size;
  config.kv_cache_memory = args.kv_cache_memory;
  config.max_model_len = args.max_model_len;
  config.max_num_seqs = args.max_num_seqs;
  config.max_num_batched_tokens = args.max_num_batched_tokens;
  config.enable_prefix_caching = args.enable_prefix_caching;
  config.enable_chunked_prefill = args.enable_chunked_prefill;
  config.seed = args.seed;
  return config;
}

Result<LoadedEngine> load_engine(const EngineArgs& args) {
  LoadedEngine e;
  auto model = load_model(args.model);
  if (!model.ok()) return model.status();
  e.model = std::move(*model);
  auto tok = tokenizer::load_tokenizer(args.tokenizer.empty() ? args.model : args.tokenizer);
  if (tok.ok()) {
    e.tokenizer = std::move(*tok);
  } else if (!args.tokenizer.empty()) {
    return tok.status();
  } else {
    e.tokenizer_error = tok.error();
  }
  auto core = EngineCore::create(*e.model, engine_config_from(args));
  if (!core.ok()) return core.status();
  e.core = std::move(*core);
  return e;
}

std::string default_chat_template_source(const EngineArgs& args) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const std::string& p : {args.tokenizer, args.model}) {
    if (p.empty()) continue;
    const fs::path path(p);
    if (path.extension() == ".gguf") return p;
    const fs::path dir = fs::is_directory(path, ec) ? path : path.parent_path();
    if (fs::exists(dir / "tokenizer_config.json", ec)) return (dir / "tokenizer_config.json").string();
  }
  return "";
}

}  // namespace tessera
