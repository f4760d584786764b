// Reasoning parsers (vLLM's --reasoning-parser NAME): a reply's thinking goes to
// reasoning_content, the rest to content, whole or delta by delta. One object per choice.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::server {

struct ReasoningSplit {
  std::optional<std::string> reasoning;  // nullopt: none (never an empty string)
  std::optional<std::string> content;    // nullopt: none (never an empty string)
};

class ReasoningParser {
 public:
  virtual ~ReasoningParser() = default;
  // The whole reply. Independent of the streaming state: the concatenated feed() + finish()
  // pieces of the same text, however it is split, equal this.
  virtual ReasoningSplit extract(const std::string& text) = 0;
  // Streaming: the next piece of text -> what belongs to each side now (empty strings as
  // nullopt). Markers split across pieces are held back until they are whole; markers that
  // switch sides never reach either side.
  virtual ReasoningSplit feed(std::string_view delta) = 0;
  // The end of the reply: releases whatever was held back.
  virtual ReasoningSplit finish() = 0;
  // Whether the reasoning has ended in the text fed so far (structured outputs and tool
  // parsing apply to what follows it): turns true in the feed() that completes the end marker,
  // or where the parser decides the reply has no reasoning (true from the start when the
  // prompt closed the think block). The content that feed() returns is already "what follows".
  virtual bool reasoning_ended() const = 0;
  // The text that ends the reasoning ("</think>"), which the engine watches for to start
  // constraining the output (only while reasoning_ended() is false).
  virtual std::string end_marker() const = 0;
};

// name: one of reasoning_parser_names(); otherwise nullptr. prompt_tail: the rendered prompt
// after the last assistant header, which says whether the template opened the thinking block
// (e.g. "<think>\n") or closed it (Qwen3's enable_thinking=false renders "<think>\n\n</think>\n\n");
// the parsers cut at the last ChatML or DeepSeek assistant header themselves, so the whole
// prompt works too. Empty when unknown.
std::unique_ptr<ReasoningParser> make_reasoning_parser(std::string_view name, std::string_view prompt_tail);
std::vector<std::string> reasoning_parser_names();

}  // namespace tessera::server
