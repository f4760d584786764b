#include "engine/engine_setup.h"

#include <filesystem>

#include "loader/hf_hub.h"
#include "model/layers/decoder_model.h"
#ifdef TESSERA_HAVE_CUDA
#include "engine/cuda/cuda_engine.h"
#endif

namespace tessera {

namespace {

hub::ResolveOptions hub_options(const EngineArgs& args, bool tokenizer) {
  hub::ResolveOptions o;
  o.revision = tokenizer ? args.tokenizer_revision : args.revision;
  o.cache_dir = args.download_dir;
  o.progress = !args.disable_progress_bar;
  o.tokenizer_only = tokenizer;
  return o;
}

}  // namespace

Result<EngineArgs> resolve_model_sources(const EngineArgs& args) {
  EngineArgs out = args;
  auto model = hub::resolve_model_path(args.model, hub_options(args, false));
  if (!model.ok()) return model.status();
  out.model = *model;
  auto tokenizer = hub::resolve_model_path(args.tokenizer, hub_options(args, true));
  if (!tokenizer.ok()) return tokenizer.status();
  out.tokenizer = *tokenizer;
  return out;
}

Result<LoadedEngine> load_engine(const EngineArgs& given) {
  auto resolved = resolve_model_sources(given);
  if (!resolved.ok()) return resolved.status();
  const EngineArgs& args = *resolved;
  LoadedEngine e;
  auto device = resolve_device(args.device);
  if (!device.ok()) return device.status();
  e.device = *device;
  // On the CPU an explicit dtype converts the float weights at load (auto keeps them as
  // stored); the CUDA upload converts to the compute dtype itself.
  auto asked = resolve_dtype(args.dtype, DType::kF32, e.device);  // the name, before loading anything
  if (!asked.ok()) return asked.status();
  std::optional<DType> cpu_weights;
  if (e.device == "cpu" && args.dtype != "auto") cpu_weights = *asked;
  auto model = load_model(args.model, cpu_weights);
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
  auto config = resolve_engine_config(args, e.model->config());
  if (!config.ok()) return config.status();
  auto dtype = resolve_dtype(args.dtype, e.model->weight_dtype(), e.device);
  if (!dtype.ok()) return dtype.status();
  config->dtype = *dtype;
  if (cpu_weights && !config->cache.kv_dtype) {  // the KV cache in the asked precision too
    config->cache.kv_dtype = *dtype == DType::kF32   ? KvDtype::kFloat32
                             : *dtype == DType::kF16 ? KvDtype::kFloat16
                                                     : KvDtype::kBfloat16;
  }
  Result<std::unique_ptr<EngineCore>> core = Status::error("unreachable");
  if (e.device == "cuda") {
#ifdef TESSERA_HAVE_CUDA
    const auto* decoder = dynamic_cast<const DecoderModel*>(e.model.get());
    if (decoder == nullptr) return Status::error(args.model + ": this model has no CUDA implementation");
    core = cuda::create_cuda_engine(*decoder, *config);
#endif
  } else {
    core = EngineCore::create(*e.model, *config);
  }
  if (!core.ok()) return core.status();
  e.core = std::move(*core);
  return e;
}

Result<std::string> resolve_device(const std::string& device) {
#ifdef TESSERA_HAVE_CUDA
  const std::string why_not = cuda::device_unavailable_reason();
#else
  const std::string why_not = "this build of tessera has no CUDA backend";
#endif
  if (device == "cpu") return std::string("cpu");
  if (device == "auto") return std::string(why_not.empty() ? "cuda" : "cpu");
  if (device == "cuda") {
    if (!why_not.empty()) return Status::error("--device cuda: " + why_not);
    return std::string("cuda");
  }
  return Status::error("unknown device '" + device + "': use cuda, cpu or auto");
}

std::string default_chat_template_source(const EngineArgs& args) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string tokenizer = hub::cached_model_path(args.tokenizer, hub_options(args, true));
  for (const std::string& p : {tokenizer, hub::cached_model_path(args.model, hub_options(args, false))}) {
    if (p.empty()) continue;
    const fs::path path(p);
    if (path.extension() == ".gguf") return p;
    const fs::path dir = fs::is_directory(path, ec) ? path : path.parent_path();
    if (fs::exists(dir / "tokenizer_config.json", ec)) return (dir / "tokenizer_config.json").string();
  }
  return "";
}

}  // namespace tessera
