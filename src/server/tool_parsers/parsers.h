// The formats behind make_tool_parser, one file each.
#pragma once

#include "server/tool_parsers/tool_parser.h"

namespace tessera::server {

// <tool_call>{"name": ..., "arguments": {...}}</tool_call> (Hermes 2/3, Qwen2.5, Qwen3).
std::unique_ptr<ToolParser> make_hermes_tool_parser(ToolParserContext ctx);
// Llama 3.1-3.3 JSON calls: {"name": ..., "parameters": {...}}, optionally after <|python_tag|>,
// several separated by ';'.
std::unique_ptr<ToolParser> make_llama3_json_tool_parser(ToolParserContext ctx);
// [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...] and the newer [TOOL_CALLS]name[ARGS]{...}.
std::unique_ptr<ToolParser> make_mistral_tool_parser(ToolParserContext ctx);
// DeepSeek-V3's <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>...
std::unique_ptr<ToolParser> make_deepseek_v3_tool_parser(ToolParserContext ctx);
// [get_weather(city="Paris"), f(x=1)] (Llama 3.2 / 4 pythonic calls).
std::unique_ptr<ToolParser> make_pythonic_tool_parser(ToolParserContext ctx);
// <tool_call><function=NAME><parameter=P>value</parameter>...</function></tool_call> (Qwen3-Coder).
std::unique_ptr<ToolParser> make_qwen3_coder_tool_parser(ToolParserContext ctx);

}  // namespace tessera::server
