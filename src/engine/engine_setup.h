// From EngineArgs to a running engine's parts: the model, its tokenizer, the EngineCore.
// Shared by the offline LLM and the server.
#pragma once

#include <memory>
#include <string>

#include "config/engine_config.h"
#include "engine/engine_core.h"
#include "model/model.h"
#include "tessera/llm.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

struct LoadedEngine {
  std::unique_ptr<Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;  // null: token-id prompts only
  std::string tokenizer_error;                      // why there is none
  std::unique_ptr<EngineCore> core;
  std::string device;  // "cuda" or "cpu": where the model runs
};

// "cuda" or "cpu" for EngineArgs::device ("auto": CUDA when a device is usable); an error
// when CUDA is asked for and unavailable.
Result<std::string> resolve_device(const std::string& device);

// args with its model and tokenizer as local paths: Hugging Face Hub names (src/loader/hf_hub.h)
// from the Hub's cache, downloaded into it when missing (a progress bar on stderr unless
// disable_progress_bar). Paths that exist, and what is no Hub name, stay as they are.
Result<EngineArgs> resolve_model_sources(const EngineArgs& args);

// Loads the model and its tokenizer (args.tokenizer, else the model's own; an explicit
// tokenizer that fails is an error) and plans the KV cache. Hub names are resolved first.
Result<LoadedEngine> load_engine(const EngineArgs& args);

// Where the model keeps its chat template: the GGUF itself, or tokenizer_config.json beside
// the weights (or beside an explicit tokenizer.json); "" when neither exists. Hub names are
// looked up in the cache only (load_engine has filled it).
std::string default_chat_template_source(const EngineArgs& args);

}  // namespace tessera
