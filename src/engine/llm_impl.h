// LLM's private state, shared by the files that implement LLM (llm.cc, llm_chat.cc,
// beam_search.cc).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "engine/engine_core.h"
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
  uint64_t next_request = 0;
  LLM::Stats stats;
  std::vector<int32_t> eos_token_ids;
  std::map<std::string, std::unique_ptr<ChatTemplate>> chat_templates;  // by source path

  // One child request of one prompt.
  struct Child {
    size_t prompt_idx;
    int64_t index;
    RequestId id;
    SamplingParams params;
    CompletionOutput out;
    std::unique_ptr<CompletionTracker> tracker;  // text, stop strings
    bool first_token_seen = false;
    double first_token_time = 0.0;
    double cumulative = 0.0;
    bool done = false;  // finished; outputs of a step already running when it stopped are dropped
  };
};

}  // namespace tessera
