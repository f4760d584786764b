// Chat requests to token ids the way mistral-common does it for SentencePiece models
// (InstructRequestNormalizer + InstructTokenizerV1/V2/V3): control tokens such as [INST],
// [AVAILABLE_TOOLS], [TOOL_CALLS] and [TOOL_RESULTS] are inserted as ids, message text is
// encoded with plain SentencePiece (control-token text in a message stays text), and tool
// definitions, calls and results are serialized as Python's json.dumps would.
//
// Versions: v1 (text [INST] markers, no tools), v2 (control tokens, tools; tool calls and
// results before the last user message are dropped; consecutive tool results share one
// [TOOL_RESULTS] list), v3 (tool call ids and every tool result kept).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tokenizer/sentencepiece_tokenizer.h"

namespace tessera::chat {

enum class MistralInstructVersion { kV1 = 1, kV2 = 2, kV3 = 3 };

// request: {"messages": [{"role": "system"|"user"|"assistant"|"tool", "content": ...,
// "tool_calls": [...], "tool_call_id": ..., "name": ..., "prefix": bool}], "tools": [...]}
// in the OpenAI format. Starts with BOS. Errors say which message is malformed.
Result<std::vector<tokenizer::TokenId>> mistral_encode_chat(const tokenizer::SentencePieceTokenizer& tok,
                                                            MistralInstructVersion version,
                                                            const nlohmann::ordered_json& request);

}  // namespace tessera::chat
