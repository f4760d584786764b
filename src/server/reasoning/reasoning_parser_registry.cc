// --reasoning-parser NAME -> parser. Names follow vLLM's.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/reasoning/reasoning_parser.h"

namespace tessera::server {

// think_tag_reasoning_parser.cc: deepseek_r1, deepseek_v3, qwen3; nullptr for other names.
std::unique_ptr<ReasoningParser> make_think_tag_reasoning_parser(std::string_view name,
                                                                 std::string_view prompt_tail);

std::unique_ptr<ReasoningParser> make_reasoning_parser(std::string_view name, std::string_view prompt_tail) {
  return make_think_tag_reasoning_parser(name, prompt_tail);
}

std::vector<std::string> reasoning_parser_names() { return {"deepseek_r1", "deepseek_v3", "qwen3"}; }

}  // namespace tessera::server
