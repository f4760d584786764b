#include "server/tool_parsers/parsers.h"

namespace tessera::server {
namespace {

using Factory = std::unique_ptr<ToolParser> (*)(ToolParserContext);

struct Entry {
  const char* name;
  Factory make;
};

constexpr Entry kParsers[] = {
    {"hermes", make_hermes_tool_parser},         {"llama3_json", make_llama3_json_tool_parser},
    {"llama4_json", make_llama3_json_tool_parser}, {"mistral", make_mistral_tool_parser},
    {"deepseek_v3", make_deepseek_v3_tool_parser}, {"pythonic", make_pythonic_tool_parser},
    {"llama4_pythonic", make_pythonic_tool_parser}, {"qwen3_coder", make_qwen3_coder_tool_parser},
};

}  // namespace

std::unique_ptr<ToolParser> make_tool_parser(std::string_view name, ToolParserContext ctx) {
  for (const Entry& e : kParsers) {
    if (name == e.name) return e.make(std::move(ctx));
  }
  return nullptr;
}

std::vector<std::string> tool_parser_names() {
  std::vector<std::string> names;
  for (const Entry& e : kParsers) names.emplace_back(e.name);
  return names;
}

}  // namespace tessera::server
