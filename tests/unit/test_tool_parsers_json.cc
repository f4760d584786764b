// The JSON-carrying tool-call parsers (hermes, llama3_json, mistral, deepseek_v3) against
// tests/data/tool_calls/<parser>.json, which tools/reference/make_tool_call_cases.py renders
// through the models' real chat templates: extract() must give the calls that were put in,
// and streaming the same text in any split must give the same content and calls. Hostile
// input (mutations of those texts, random bytes, deep nesting, megabytes of brackets) must
// never throw or crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <random>

#include "server/tool_parsers/json_scan.h"
#include "server/tool_parsers/parsers.h"
#include "tool_parser_test_util.h"

namespace tessera::server {
namespace {

using namespace tool_parser_test;
using Json = nlohmann::ordered_json;
using Factory = std::unique_ptr<ToolParser> (*)(ToolParserContext);

struct Kind {
  const char* name;
  Factory make;
  bool mistral_ids;
};

const Kind kKinds[] = {
    {"hermes", make_hermes_tool_parser, false},
    {"llama3_json", make_llama3_json_tool_parser, false},
    {"mistral", make_mistral_tool_parser, true},
    {"deepseek_v3", make_deepseek_v3_tool_parser, false},
};

// Ids in the server's formats, made from a counter so every issued id is known.
struct IdLog {
  bool mistral = false;
  std::vector<std::string> issued;
};

std::string make_test_id(IdLog& log) {
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  size_t n = log.issued.size() + 1;
  std::string id;
  if (log.mistral) {
    for (int i = 0; i < 9; ++i, n /= 62) id += kAlnum[n % 62];
  } else {
    char hex[40];
    std::snprintf(hex, sizeof hex, "%032zx", n);
    id = std::string("chatcmpl-tool-") + hex;
  }
  log.issued.push_back(id);
  return id;
}

std::unique_ptr<ToolParser> make(const Kind& kind, const std::shared_ptr<IdLog>& log) {
  log->mistral = kind.mistral_ids;
  ToolParserContext ctx;
  ctx.make_id = [log] { return make_test_id(*log); };
  return kind.make(std::move(ctx));
}

bool valid_id(const std::string& id, bool mistral) {
  auto all = [&](size_t from, auto pred) {
    for (size_t i = from; i < id.size(); ++i) {
      if (!pred(static_cast<unsigned char>(id[i]))) return false;
    }
    return true;
  };
  if (mistral) return id.size() == 9 && all(0, [](unsigned char c) { return std::isalnum(c) != 0; });
  return id.size() == 46 && id.rfind("chatcmpl-tool-", 0) == 0 &&
         all(14, [](unsigned char c) { return std::isxdigit(c) != 0 && !std::isupper(c); });
}

// ---- streaming ----

// Cuts just before, inside and just after every marker-like piece of the text.
std::vector<size_t> marker_cuts(std::string_view text) {
  static const char* kPieces[] = {"<tool_call>", "</tool_call>", "<|python_tag|>", "[TOOL_CALLS]", "[ARGS]",
                                  "[CALL_ID]", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>",
                                  "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>", "\n```json\n", "\n```", "{", "}",
                                  "\"", ";", "\\", "[", "]"};
  std::vector<size_t> cuts;
  for (std::string_view piece : kPieces) {
    for (size_t at = text.find(piece); at != std::string_view::npos; at = text.find(piece, at + 1)) {
      cuts.insert(cuts.end(), {at, at + piece.size() / 2, at + piece.size()});
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

// ---- checks ----

// A streamed reply agrees with the whole-reply parse of the same text.
void expect_stream_matches(const Streamed& s, const ExtractedToolCalls& whole, const std::string& text,
                           const std::string& where) {
  SCOPED_TRACE(where);
  EXPECT_EQ(s.error, "");
  if (!whole.tools_called) {
    if (s.calls.empty()) {
      EXPECT_EQ(s.content, text);
    } else {
      // A call broke after its name went out: the stream cannot take it back.
      EXPECT_EQ(text.compare(0, s.content.size(), s.content), 0) << "streamed content is not a prefix";
    }
    return;
  }
  EXPECT_EQ(s.content, whole.content.value_or(""));
  ASSERT_EQ(s.calls.size(), whole.tool_calls.size());
  for (size_t i = 0; i < s.calls.size(); ++i) {
    EXPECT_EQ(s.calls[i].name, whole.tool_calls[i].name) << "call " << i;
    EXPECT_EQ(s.calls[i].arguments, whole.tool_calls[i].arguments) << "call " << i;
  }
}

void expect_extract(const ExtractedToolCalls& got, const Json& expected, const std::string& text, const IdLog& ids) {
  ASSERT_EQ(got.tools_called, expected["tools_called"].get<bool>());
  if (!got.tools_called) {
    EXPECT_TRUE(got.tool_calls.empty());
    ASSERT_TRUE(got.content.has_value());
    EXPECT_EQ(*got.content, text);
    return;
  }
  if (expected["content"].is_null()) {
    EXPECT_FALSE(got.content.has_value()) << *got.content;
  } else {
    EXPECT_EQ(got.content.value_or("<none>"), expected["content"].get<std::string>());
  }
  const Json& calls = expected["tool_calls"];
  ASSERT_EQ(got.tool_calls.size(), calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    const ToolCall& call = got.tool_calls[i];
    SCOPED_TRACE("call " + std::to_string(i));
    EXPECT_EQ(call.name, calls[i]["name"].get<std::string>());
    EXPECT_EQ(call.arguments, calls[i]["arguments_text"].get<std::string>()) << "not the text vLLM returns";
    const Json parsed = Json::parse(call.arguments, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << call.arguments;
    EXPECT_EQ(parsed, calls[i]["arguments"]);
    EXPECT_TRUE(valid_id(call.id, ids.mistral)) << call.id;
    EXPECT_NE(std::find(ids.issued.begin(), ids.issued.end(), call.id), ids.issued.end()) << "id not from make_id";
    for (size_t j = 0; j < i; ++j) EXPECT_NE(call.id, got.tool_calls[j].id);
  }
}

// Every case of one parser: extract, then streaming in many splits.
int run_cases(const Kind& kind) {
  const Json cases = load_cases(kind.name);
  EXPECT_TRUE(cases.is_array() && !cases.empty()) << "no cases for " << kind.name << " under "
                                                  << testing::test_data();
  if (!cases.is_array()) return 0;
  std::mt19937 rng(1234);
  int checked = 0;
  for (const Json& c : cases) {
    const std::string text = c["text"].get<std::string>();
    SCOPED_TRACE(std::string(kind.name) + ": " + c["name"].get<std::string>());
    auto ids = std::make_shared<IdLog>();
    const ExtractedToolCalls whole = make(kind, ids)->extract(text);
    expect_extract(whole, c["expected"], text, *ids);

    std::vector<std::pair<std::string, std::vector<size_t>>> splits = {
        {"whole", {}}, {"every byte", every_byte(text.size())}, {"markers", marker_cuts(text)}};
    for (int i = 0; i < 12; ++i) splits.push_back({"random " + std::to_string(i), random_cuts(text.size(), rng, 7)});
    for (const auto& [label, cuts] : splits) {
      auto stream_ids = std::make_shared<IdLog>();
      auto parser = make(kind, stream_ids);
      const Streamed s = stream(*parser, text, cuts);
      expect_stream_matches(s, whole, text, label);
      for (const ToolCall& call : s.calls) EXPECT_TRUE(valid_id(call.id, kind.mistral_ids)) << call.id;
    }
    ++checked;
  }
  return checked;
}

TEST(JsonToolParsers, HermesCases) { EXPECT_GE(run_cases(kKinds[0]), 30); }
TEST(JsonToolParsers, Llama3JsonCases) { EXPECT_GE(run_cases(kKinds[1]), 20); }
TEST(JsonToolParsers, MistralCases) { EXPECT_GE(run_cases(kKinds[2]), 20); }
TEST(JsonToolParsers, DeepSeekV3Cases) { EXPECT_GE(run_cases(kKinds[3]), 12); }

TEST(JsonToolParsers, SpecialTokens) {
  auto ids = std::make_shared<IdLog>();
  EXPECT_TRUE(make(kKinds[0], ids)->keeps_special_tokens());  // vLLM turns skipping off for hermes
  EXPECT_FALSE(make(kKinds[1], ids)->keeps_special_tokens());
  EXPECT_TRUE(make(kKinds[2], ids)->keeps_special_tokens());
  EXPECT_TRUE(make(kKinds[3], ids)->keeps_special_tokens());
}

TEST(JsonToolParsers, FallbackIdsWithoutMakeId) {
  const char* one_call[] = {
      "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>",
      "{\"name\": \"f\", \"parameters\": {}}",
      "[TOOL_CALLS]f[ARGS]{}",
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
  };
  for (size_t i = 0; i < std::size(kKinds); ++i) {
    const ExtractedToolCalls r = kKinds[i].make(ToolParserContext{})->extract(one_call[i]);
    ASSERT_TRUE(r.tools_called) << kKinds[i].name;
    EXPECT_TRUE(valid_id(r.tool_calls[0].id, kKinds[i].mistral_ids)) << r.tool_calls[0].id;
    EXPECT_EQ(r.tool_calls[0].arguments, "{}");
  }
}

// The first delta of a call comes as soon as its name is complete, before the arguments end.
TEST(JsonToolParsers, NameAndArgumentsStreamEarly) {
  auto ids = std::make_shared<IdLog>();
  auto p = make(kKinds[0], ids);
  ToolStreamDelta d = p->feed("Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa");
  EXPECT_EQ(d.content, "Sure.\n");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].name.value_or(""), "get_weather");
  EXPECT_EQ(d.tool_calls[0].arguments, "{\"city\": \"Pa");
  d = p->feed("ris\"}}\n</tool_call>");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_FALSE(d.tool_calls[0].name.has_value());
  EXPECT_EQ(d.tool_calls[0].arguments, "ris\"}");
  EXPECT_TRUE(p->finish().empty());
}

// Content goes out at once unless it may start a marker.
TEST(JsonToolParsers, HoldsBackOnlyMarkerPrefixes) {
  auto ids = std::make_shared<IdLog>();
  auto p = make(kKinds[0], ids);
  EXPECT_EQ(p->feed("Hello <tool").content, "Hello ");
  EXPECT_EQ(p->feed("box> world").content, "<toolbox> world");
  EXPECT_EQ(p->finish().content, "");
  auto m = make(kKinds[2], ids);
  EXPECT_EQ(m->feed("a [TOOL_").content, "a ");
  EXPECT_EQ(m->finish().content, "[TOOL_");
  auto l = make(kKinds[1], ids);
  EXPECT_EQ(l->feed("The answer").content, "The answer");
  EXPECT_EQ(l->feed(" is {x}").content, " is {x}");
}

std::string normalize(std::string_view json) {
  JsonNormalizer n;
  const size_t used = n.feed(json);
  n.finish();
  if (!n.done() || json.find_first_not_of(" \t\r\n", used) != std::string_view::npos) return "<invalid>";
  return n.take_output();
}

// Floats print as Python's repr(): shortest round trip, positional for exponents -4..16.
TEST(JsonToolParsers, NormalizerWritesFloatsAsPythonRepr) {
  const std::pair<const char*, const char*> cases[] = {
      {"1e16", "1e+16"}, {"1e15", "1000000000000000.0"}, {"0.1", "0.1"},
      {"0.333333333333333314829616256247", "0.3333333333333333"}, {"-0.0", "-0.0"}, {"0.00001", "1e-05"}, {"1e-4", "0.0001"}, {"5e-324", "5e-324"},
      {"1.7976931348623157e308", "1.7976931348623157e+308"}, {"123456789e0", "123456789.0"}, {"2.5e-5", "2.5e-05"},
      {"-15e299", "-1.5e+300"}, {"1E2", "100.0"}, {"0.30000000000000004", "0.30000000000000004"},
      {"1e400", "Infinity"}, {"-1e400", "-Infinity"}, {"1e-400", "0.0"}, {"12.50", "12.5"}};
  for (const auto& [in, want] : cases) EXPECT_EQ(normalize(in), want) << in;
}

TEST(JsonToolParsers, NormalizerWritesPythonJsonDumps) {
  EXPECT_EQ(normalize(R"( {"a":1,"b":[true,false,null,{}],"c":{"d":[]}} )"),
            R"({"a": 1, "b": [true, false, null, {}], "c": {"d": []}})");
  EXPECT_EQ(normalize(R"("\u00e9\ud83d\ude00\/\u0007\n")"), "\"é😀/\\u0007\\n\"");
  EXPECT_EQ(normalize(R"(["\udc00x", "\ud800"])"), R"(["\udc00x", "\ud800"])");  // lone surrogates stay escaped
  EXPECT_EQ(normalize("[NaN, Infinity, -Infinity, -0, 1E2, 123456789012345678901234567890]"),
            "[NaN, Infinity, -Infinity, 0, 100.0, 123456789012345678901234567890]");
  EXPECT_EQ(normalize("\"a\xff" "b\xe2\x82\""), "\"a\xef\xbf\xbd" "b\xef\xbf\xbd\"");  // bad UTF-8 -> U+FFFD
  for (const char* bad : {"[1,]", "{\"a\" 1}", "01", "1.", ".5", "+1", "[1 2]", "{'a': 1}", "\"a\tb\"", "tru",
                          "{\"a\":1", "\"\\x\"", "\"\\u12g4\"", "[}", "{,}", "-"}) {
    EXPECT_EQ(normalize(bad), "<invalid>") << bad;
  }
}

// ---- hostile input ----

// Feeds `text` whole and in random pieces; no exception, and the stream agrees with extract
// whenever extract found calls (the same state machine ran without failing).
void survive(const Kind& kind, const std::string& text, std::mt19937& rng, int max_piece) {
  auto ids = std::make_shared<IdLog>();
  ExtractedToolCalls whole;
  ASSERT_NO_THROW(whole = make(kind, ids)->extract(text));
  if (!whole.tools_called) {
    ASSERT_TRUE(whole.content.has_value());
    EXPECT_TRUE(*whole.content == text) << "content is not the reply";
  }
  auto parser = make(kind, ids);
  Streamed s;
  ASSERT_NO_THROW(s = stream(*parser, text, random_cuts(text.size(), rng, max_piece)));
  expect_stream_matches(s, whole, text, std::string(kind.name) + " hostile input");
}

std::string mutate(std::string text, std::mt19937& rng) {
  static const std::string kBits[] = {"{", "}", "[", "]", "\"", ",", ":", ";", "\\", "\n", "<tool_call>",
                                      "</tool_call>", "[TOOL_CALLS]", "[ARGS]", "<｜tool▁call▁end｜>",
                                      "<｜tool▁call▁begin｜>", "\xff", "\xe2\x82", "\\u", "\\ud83d", "1e999"};
  std::uniform_int_distribution<int> op(0, 3);
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !text.empty(); ++e) {
    const size_t at = rng() % text.size();
    switch (op(rng)) {
      case 0: text.erase(at, 1 + rng() % 8); break;
      case 1: text.insert(at, kBits[rng() % std::size(kBits)]); break;
      case 2: text[at] = static_cast<char>(rng() % 256); break;
      default: text.resize(at); break;
    }
  }
  return text;
}

TEST(JsonToolParsers, MutatedCasesNeverCrash) {
  std::mt19937 rng(99);
  for (const Kind& kind : kKinds) {
    const Json cases = load_cases(kind.name);
    if (!cases.is_array()) continue;
    for (const Json& c : cases) {
      for (int i = 0; i < 8; ++i) survive(kind, mutate(c["text"].get<std::string>(), rng), rng, 5);
    }
  }
}

TEST(JsonToolParsers, RandomBytesNeverCrash) {
  std::mt19937 rng(7);
  for (const Kind& kind : kKinds) {
    for (int i = 0; i < 200; ++i) {
      std::string text(rng() % 300, '\0');
      for (char& ch : text) ch = static_cast<char>(rng() % 256);
      survive(kind, text, rng, 9);
    }
  }
}

TEST(JsonToolParsers, HugeAndDeepInputs) {
  std::mt19937 rng(5);
  const std::string mb_open(1 << 20, '['), mb_brace(1 << 20, '{');
  const std::vector<std::string> prefixes = {"", "<tool_call>", "<|python_tag|>", "[TOOL_CALLS]", "[TOOL_CALLS]x[ARGS]",
                                             "<tool_call>{\"name\": \"f\", \"arguments\": ",
                                             "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": ",
                                             "{\"name\": \"f\", \"parameters\": ",
                                             "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n"};
  for (const Kind& kind : kKinds) {
    for (const std::string& prefix : prefixes) {
      survive(kind, prefix + mb_open, rng, 4096);
      survive(kind, prefix + mb_brace, rng, 4096);
    }
  }
}

TEST(JsonToolParsers, UnbalancedMarkers) {
  std::mt19937 rng(3);
  const char* texts[] = {
      "</tool_call></tool_call><tool_call><tool_call>",
      "<tool_call>\n</tool_call>",
      "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call></tool_call><tool_call>",
      "[TOOL_CALLS][TOOL_CALLS][TOOL_CALLS]",
      "[TOOL_CALLS][ARGS][ARGS]{",
      "[TOOL_CALLS]f[ARGS]{}[TOOL_CALLS]",
      "<｜tool▁calls▁end｜><｜tool▁call▁end｜><｜tool▁calls▁begin｜>",
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜><｜tool▁call▁begin｜><｜tool▁sep｜><｜tool▁sep｜>",
      "<|python_tag|><|python_tag|>{}",
      ";;;{};{}",
  };
  for (const Kind& kind : kKinds) {
    for (const char* t : texts) survive(kind, t, rng, 3);
  }
}

// Invalid UTF-8 inside JSON strings comes out as U+FFFD, so the arguments stay valid JSON.
TEST(JsonToolParsers, InvalidUtf8InArguments) {
  auto ids = std::make_shared<IdLog>();
  const ExtractedToolCalls r =
      make(kKinds[0], ids)->extract("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"x\xc3(\xff\"}}</tool_call>");
  ASSERT_TRUE(r.tools_called);
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"a\": \"x\xef\xbf\xbd(\xef\xbf\xbd\"}");
  EXPECT_FALSE(Json::parse(r.tool_calls[0].arguments, nullptr, false).is_discarded());
}

// vLLM returns mistral's [ARGS] arguments unparsed, so a truncated one is still a call.
TEST(JsonToolParsers, MistralArgsFormatKeepsRawArguments) {
  auto ids = std::make_shared<IdLog>();
  const ExtractedToolCalls r = make(kKinds[2], ids)->extract("[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Pa");
  ASSERT_TRUE(r.tools_called);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"city\": \"Pa");
}

// After a failure with no call sent, the rest of the stream is plain content.
TEST(JsonToolParsers, FailureBeforeAnyCallTurnsIntoContent) {
  auto ids = std::make_shared<IdLog>();
  auto p = make(kKinds[0], ids);
  Streamed s;
  absorb(s, p->feed("Hi <tool_call>{\"oops\": 1"));
  absorb(s, p->feed("}</tool_call> and more"));
  absorb(s, p->finish());
  EXPECT_TRUE(s.calls.empty());
  EXPECT_EQ(s.content, "Hi <tool_call>{\"oops\": 1}</tool_call> and more");
}

}  // namespace
}  // namespace tessera::server
