// Small pieces every tool-call parser here uses: finding markers in text that is still
// arriving, UTF-8 (WTF-8) coding, and call ids and deltas.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_parsers/tool_parser.h"

namespace tessera::server {

// The longest proper prefix of `marker` that `text` ends with, in bytes: what a streaming
// parser holds back because the next piece may complete the marker.
size_t partial_marker_len(std::string_view text, std::string_view marker);
// The same for whichever of `markers` gives the longest.
size_t partial_marker_len(std::string_view text, std::initializer_list<std::string_view> markers);

enum class MarkerMatch { kNo, kPartial, kFull };
// Whether `text` starts with `marker` (kFull) or may still become it as more text comes
// (kPartial: a proper prefix of it, the empty text included).
MarkerMatch match_marker(std::string_view text, std::string_view marker);

// `cp` as UTF-8, except that surrogates get their 3-byte forms (WTF-8).
void append_utf8(std::string& out, uint32_t cp);

enum class Utf8 { kOk, kShort, kBad };
// One UTF-8 sequence at s[i]: overlong forms and values past U+10FFFF are bad, and so are
// surrogates unless allow_surrogates (WTF-8). kShort: s ends inside it.
Utf8 decode_utf8(std::string_view s, size_t i, bool allow_surrogates, uint32_t& cp, size_t& len);

// `n` characters drawn uniformly from `alphabet`.
std::string random_tool_id(std::string_view alphabet, size_t n);
// "chatcmpl-tool-" and 32 lowercase hex digits, vLLM's id, for when the context has no make_id.
std::string random_call_id();

// Whole calls from a stream's call deltas (each call's first delta carries its id and name).
std::vector<ToolCall> join_calls(const std::vector<ToolCallDelta>& deltas);

}  // namespace tessera::server
