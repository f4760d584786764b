// LLM's private state, shared by the files that implement LLM (llm.cc, llm_chat.cc,
// beam_search.cc).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "engine/engine_core.h"
#include "engine/frontend.h"
#include "engine/output_processor.h"
#include "model/model.h"
#include "tessera/llm.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

struct LLM::Impl {
  EngineArgs args;
  std::unique_ptr<Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;  // null: token-id prompts only
  std::string tokenizer_error;
  std::unique_ptr<EngineCore> engine;
  std::unique_ptr<EngineFrontend> frontend;  // over engine
  uint64_t next_request = 0;  // stream ids
  LLM::Stats stats;
  std::vector<int32_t> eos_token_ids;
  std::map<std::string, std::unique_ptr<ChatTemplate>> chat_templates;  // by source path
};

}  // namespace tessera
