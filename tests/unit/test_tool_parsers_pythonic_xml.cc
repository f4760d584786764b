// The pythonic and qwen3_coder tool-call parsers against tests/data/tool_calls/{pythonic,
// qwen3_coder}.json, made by tools/reference/make_tool_call_cases_pythonic_xml.py with Python as
// the reference (ast.literal_eval + json.dumps; jinja2 renderings of Qwen3-Coder's template):
// extract() must give the expected calls, content and arguments text, and streaming the same
// text in any split must give the same content and calls. Hostile input (mutations of those
// texts, random bytes, deep nesting, unbalanced tags) must never throw or crash.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "server/tool_parsers/parsers.h"
#include "server/tool_parsers/python_literal.h"
#include "tool_parser_test_util.h"

namespace tessera::server {
namespace {

using namespace tool_parser_test;
using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;
using Factory = std::unique_ptr<ToolParser> (*)(ToolParserContext);

Factory factory(const std::string& parser) {
  return parser == "pythonic" ? make_pythonic_tool_parser : make_qwen3_coder_tool_parser;
}

std::unique_ptr<ToolParser> make(const std::string& parser, const OrderedJson& tools) {
  ToolParserContext ctx;
  ctx.tools = tools;
  auto counter = std::make_shared<int>(0);
  ctx.make_id = [counter] { return "chatcmpl-tool-test" + std::to_string((*counter)++); };
  return factory(parser)(std::move(ctx));
}

// ---- streaming ----

bool is_json_object(const std::string& text) {
  const Json j = Json::parse(text, nullptr, false);
  return !j.is_discarded() && j.is_object();
}

// content = some prefix of text + some suffix of text (what a stream may show when a reply
// turns out not to be calls after a call went out: the text before the calls, and the text
// after the point where the calls broke).
bool prefix_plus_suffix(const std::string& content, const std::string& text) {
  size_t common = 0;
  while (common < content.size() && common < text.size() && content[common] == text[common]) ++common;
  for (size_t k = common + 1; k-- > 0;) {
    const std::string_view rest = std::string_view(content).substr(k);
    if (rest.size() <= text.size() && std::string_view(text).ends_with(rest)) return true;
  }
  return false;
}

// The streaming contract against the whole-reply parse of the same text, for one split.
void expect_stream_matches(const std::string& parser, const OrderedJson& tools, const std::string& text,
                           const ExtractedToolCalls& whole, const std::vector<size_t>& cuts,
                           const std::string& label) {
  auto p = make(parser, tools);
  const Streamed s = stream(*p, text, cuts);
  EXPECT_EQ(s.error, "") << label;
  if (whole.tools_called) {
    EXPECT_EQ(s.content, whole.content.value_or("")) << label;
    ASSERT_EQ(s.calls.size(), whole.tool_calls.size()) << label;
    for (size_t i = 0; i < s.calls.size(); ++i) {
      EXPECT_EQ(s.calls[i].name, whole.tool_calls[i].name) << label << " call " << i;
      EXPECT_EQ(s.calls[i].arguments, whole.tool_calls[i].arguments) << label << " call " << i;
    }
    return;
  }
  if (s.calls.empty()) {
    EXPECT_EQ(s.content, text) << label;
    return;
  }
  // Calls went out before the reply broke: they stay valid, nothing is invented.
  for (const ToolCall& c : s.calls) EXPECT_TRUE(is_json_object(c.arguments)) << label << ": " << c.arguments;
  EXPECT_TRUE(prefix_plus_suffix(s.content, text)) << label << ": " << s.content;
}

void expect_stream_splits(const std::string& parser, const OrderedJson& tools, const std::string& text,
                          const ExtractedToolCalls& whole, const std::string& label, int random_rounds) {
  expect_stream_matches(parser, tools, text, whole, {}, label + " [whole]");
  expect_stream_matches(parser, tools, text, whole, every_byte(text.size()), label + " [bytes]");
  std::mt19937 rng(static_cast<unsigned>(text.size()) * 31u + 7u);
  for (int round = 0; round < random_rounds; ++round) {
    expect_stream_matches(parser, tools, text, whole, random_cuts(text.size(), rng, 7),
                          label + " [random " + std::to_string(round) + "]");
  }
}

// ---- reference cases ----

void check_reference_cases(const std::string& parser) {
  const OrderedJson cases = load_cases(parser);
  ASSERT_TRUE(cases.is_array() && !cases.empty()) << "missing " << testing::test_data() << "/tool_calls/" << parser
                                                   << ".json (tools/reference/make_tool_call_cases_pythonic_xml.py)";
  for (const OrderedJson& c : cases) {
    const std::string name = parser + "/" + c["name"].get<std::string>();
    const std::string text = c["text"];
    const OrderedJson tools = c.value("tools", OrderedJson());
    const OrderedJson& want = c["expected"];
    const ExtractedToolCalls got = make(parser, tools)->extract(text);
    EXPECT_EQ(got.tools_called, want["tools_called"].get<bool>()) << name;
    if (want["content"].is_null()) {
      EXPECT_FALSE(got.content.has_value()) << name << ": " << got.content.value_or("");
    } else {
      EXPECT_EQ(got.content.value_or("<none>"), want["content"].get<std::string>()) << name;
    }
    ASSERT_EQ(got.tool_calls.size(), want["tool_calls"].size()) << name;
    for (size_t i = 0; i < got.tool_calls.size(); ++i) {
      const OrderedJson& w = want["tool_calls"][i];
      const ToolCall& g = got.tool_calls[i];
      EXPECT_FALSE(g.id.empty()) << name;
      EXPECT_EQ(g.name, w["name"].get<std::string>()) << name;
      EXPECT_EQ(g.arguments, w["arguments_text"].get<std::string>()) << name << " call " << i;
      const Json parsed = Json::parse(g.arguments, nullptr, false);
      EXPECT_EQ(parsed, Json(w["arguments"])) << name << " call " << i;
    }
    expect_stream_splits(parser, tools, text, got, name, 3);
  }
}

TEST(PythonicToolParser, ReferenceCases) { check_reference_cases("pythonic"); }
TEST(Qwen3CoderToolParser, ReferenceCases) { check_reference_cases("qwen3_coder"); }

// Every mutation of a reference text (a byte dropped, a structural byte inserted, a cut)
// still streams exactly as it parses whole.
void check_mutations(const std::string& parser) {
  const OrderedJson cases = load_cases(parser);
  ASSERT_TRUE(cases.is_array());
  static const std::string kInserts[] = {"[", "]", "(", ")", ",", "=", "\"", "'", "\\", "#", "<", ">",
                                         "\n", "<tool_call>", "</parameter>", "</function>", "\xe6", "<parameter=x>"};
  std::mt19937 rng(1234);
  for (const OrderedJson& c : cases) {
    const std::string text = c["text"];
    const OrderedJson tools = c.value("tools", OrderedJson());
    for (int m = 0; m < 12 && !text.empty(); ++m) {
      std::string t = text;
      const size_t at = std::uniform_int_distribution<size_t>(0, t.size() - 1)(rng);
      switch (m % 3) {
        case 0: t.erase(at, 1); break;
        case 1: t.insert(at, kInserts[rng() % std::size(kInserts)]); break;
        default: t.resize(at); break;
      }
      const ExtractedToolCalls whole = make(parser, tools)->extract(t);
      if (!whole.tools_called) {
        EXPECT_EQ(whole.content.value_or("<none>"), t);
      }
      expect_stream_splits(parser, tools, t, whole, parser + " mutation of " + c["name"].get<std::string>(), 1);
    }
  }
}

TEST(PythonicToolParser, MutationsStreamAsTheyParse) { check_mutations("pythonic"); }
TEST(Qwen3CoderToolParser, MutationsStreamAsTheyParse) { check_mutations("qwen3_coder"); }

// ---- hostile input ----

void check_random_bytes(const std::string& parser) {
  static const std::string kPieces[] = {"[", "]", "(", ")", "{", "}", "f(", "a=", ",", "'", "\"", "\"\"\"", "\\",
                                        "1", "-", "e", ".", "True", " ", "\n", "<|python_start|>", "<tool_call>",
                                        "<function=f>", "<parameter=p>", "</parameter>", "</function>",
                                        "</tool_call>", "\xf0\x9f", "\x80", "\xff", "x"};
  std::mt19937 rng(99);
  const OrderedJson tools = OrderedJson::parse(R"([{"type": "function", "function": {"name": "f",
      "parameters": {"properties": {"p": {"type": "object"}, "q": {"type": "integer"}}}}}])");
  for (int round = 0; round < 2000; ++round) {
    std::string t;
    const int n = std::uniform_int_distribution<int>(0, 60)(rng);
    for (int i = 0; i < n; ++i) {
      if (rng() % 4 == 0) {
        t += static_cast<char>(rng() % 256);
      } else {
        t += kPieces[rng() % std::size(kPieces)];
      }
    }
    const ExtractedToolCalls whole = make(parser, tools)->extract(t);
    if (!whole.tools_called) {
      EXPECT_EQ(whole.content.value_or("<none>"), t);
    }
    for (const ToolCall& call : whole.tool_calls) EXPECT_TRUE(is_json_object(call.arguments)) << call.arguments;
    std::mt19937 cut_rng(static_cast<unsigned>(round));
    expect_stream_matches(parser, tools, t, whole, random_cuts(t.size(), cut_rng, 5), parser + " random bytes");
  }
}

TEST(PythonicToolParser, RandomBytesNeverCrash) { check_random_bytes("pythonic"); }
TEST(Qwen3CoderToolParser, RandomBytesNeverCrash) { check_random_bytes("qwen3_coder"); }

// Nothing recurses with the input's depth: deep brackets are plain content (or a string).
TEST(PythonicToolParser, DeepNestingIsContent) {
  const std::string deep(100000, '[');
  const std::string texts[] = {deep, "[f(a=" + deep + std::string(100000, ']') + ")]",
                               "[f(a=" + std::string(100000, '('),
                               "[f(a=" + std::string(100000, '{'), "[f(a=" + std::string(50000, '-') + "1)]"};
  for (const std::string& t : texts) {
    const ExtractedToolCalls whole = make("pythonic", nullptr)->extract(t);
    EXPECT_FALSE(whole.tools_called);
    EXPECT_EQ(whole.content.value_or(""), t);
    std::mt19937 rng(5);
    expect_stream_matches("pythonic", nullptr, t, whole, random_cuts(t.size(), rng, 4096), "deep");
  }
}

TEST(Qwen3CoderToolParser, DeepNestingStaysAString) {
  const OrderedJson tools = OrderedJson::parse(R"([{"type": "function", "function": {"name": "f",
      "parameters": {"properties": {"p": {"type": "object"}}}}}])");
  const std::string value = std::string(100000, '[') + std::string(100000, ']');
  const std::string text =
      "<tool_call>\n<function=f>\n<parameter=p>\n" + value + "\n</parameter>\n</function>\n</tool_call>";
  const ExtractedToolCalls whole = make("qwen3_coder", tools)->extract(text);
  ASSERT_TRUE(whole.tools_called);
  EXPECT_EQ(whole.tool_calls[0].arguments, "{\"p\": \"" + value + "\"}");
  std::mt19937 rng(6);
  expect_stream_matches("qwen3_coder", tools, text, whole, random_cuts(text.size(), rng, 4096), "deep");
}

TEST(Qwen3CoderToolParser, UnbalancedTagsAreContent) {
  const std::string texts[] = {
      "<tool_call><tool_call></tool_call>",
      "</function><function=",
      "<parameter=x>",
      "<tool_call>\n<function=f>\n" + [] {
        std::string s;
        for (int i = 0; i < 1000; ++i) s += "<parameter=";
        return s;
      }(),
      "<tool_call>\n<function=f\n<parameter=a>\n1\n</parameter>\n</function>",
      "<tool_call>\n<function=f>\n<parameter=>\n1\n</parameter>\n</function>",
      "<function=" + std::string(5000, 'n') + ">",
      "text <function=f> more text",
      "</tool_call></function></parameter>",
  };
  for (const std::string& t : texts) {
    const ExtractedToolCalls whole = make("qwen3_coder", nullptr)->extract(t);
    EXPECT_FALSE(whole.tools_called) << t.substr(0, 80);
    EXPECT_EQ(whole.content.value_or(""), t);
    expect_stream_matches("qwen3_coder", nullptr, t, whole, every_byte(t.size()), "unbalanced");
  }
}

// Long values streamed a byte at a time come out whole (and in linear time: the parsers resume
// their scans instead of restarting them).
TEST(ToolParsersPythonicXml, LongValuesStreamByteByByte) {
  const std::string long_value(200000, 'x');
  const std::string py = "[f(a=\"" + long_value + "\", b=[" + std::string(1000, '[') + std::string(1000, ']') + "])]";
  const ExtractedToolCalls py_whole = make("pythonic", nullptr)->extract(py);
  EXPECT_FALSE(py_whole.tools_called);  // 1001 nested lists exceed the nesting bound
  expect_stream_matches("pythonic", nullptr, py, py_whole, every_byte(py.size()), "long pythonic");
  const std::string py_ok = "[f(a=\"" + long_value + "\")]";
  const ExtractedToolCalls py_ok_whole = make("pythonic", nullptr)->extract(py_ok);
  ASSERT_TRUE(py_ok_whole.tools_called);
  expect_stream_matches("pythonic", nullptr, py_ok, py_ok_whole, every_byte(py_ok.size()), "long pythonic ok");
  const std::string xml =
      "<tool_call>\n<function=f>\n<parameter=a>\n" + long_value + "\n</parameter>\n</function>\n</tool_call>";
  const ExtractedToolCalls xml_whole = make("qwen3_coder", nullptr)->extract(xml);
  ASSERT_TRUE(xml_whole.tools_called);
  EXPECT_EQ(xml_whole.tool_calls[0].arguments, "{\"a\": \"" + long_value + "\"}");
  expect_stream_matches("qwen3_coder", nullptr, xml, xml_whole, every_byte(xml.size()), "long xml");
}

// ---- details the reference data does not reach ----

TEST(PythonicToolParser, LoneSurrogatesPrintAsEscapes) {
  // Python keeps "\ud83d\ude00" as two lone surrogates (json.dumps then cannot be encoded);
  // escaped, a JSON reader joins them.
  const ExtractedToolCalls r = make("pythonic", nullptr)->extract(R"([f(s="\ud83d\ude00")])");
  ASSERT_TRUE(r.tools_called);
  EXPECT_EQ(r.tool_calls[0].arguments, R"({"s": "\ud83d\ude00"})");
}

// A stream cut short inside a call: the calls sent are closed and stay valid JSON.
void expect_streamed_calls(const Streamed& s, const std::vector<std::pair<std::string, std::string>>& calls,
                           const std::string& content) {
  EXPECT_EQ(s.error, "");
  ASSERT_EQ(s.calls.size(), calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(s.calls[i].name, calls[i].first) << "call " << i;
    EXPECT_EQ(s.calls[i].arguments, calls[i].second) << "call " << i;
  }
  EXPECT_EQ(s.content, content);
}

TEST(PythonicToolParser, TruncatedCallIsClosed) {
  const Streamed s = stream(*make("pythonic", nullptr), "[f(a=1), g(b=2, c=\"unfinished", {3, 8, 20});
  expect_streamed_calls(s, {{"f", "{\"a\": 1}"}, {"g", "{\"b\": 2}"}}, "");
}

TEST(Qwen3CoderToolParser, TruncatedCallIsClosed) {
  const std::string text = "Hi\n<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n<parameter=b>\nhal";
  const Streamed s = stream(*make("qwen3_coder", nullptr), text, every_byte(text.size()));
  expect_streamed_calls(s, {{"f", "{\"a\": \"1\"}"}}, "Hi\n");
}

TEST(PythonLiteral, MatchesPython) {
  // Expected values printed by CPython 3.11: json.dumps(ast.literal_eval(src), ensure_ascii=False).
  const std::pair<const char*, const char*> cases[] = {
      {"1e16", "1e+16"},        {"1e15", "1000000000000000.0"}, {"0.0001", "0.0001"},
      {"0.00001", "1e-05"},     {"-0.0", "-0.0"},               {"1e999", "Infinity"},
      {"0x_1f", "31"},          {"0o777", "511"},               {"00", "0"},
      {"2.5e-300", "2.5e-300"}, {"'\\777'", "\"ǿ\""},           {"\"a\" 'b'", "\"ab\""},
      {"(1)", "1"},             {"(1,)", "[1]"},                {"{1: 2, 1.0: 3, True: 4}", "{\"1\": 4}"},
      {"'\\q\\d'", "\"\\\\q\\\\d\""}, {"[1, # c\n 2]", "[1, 2]"}, {"0xffffffffffffffffff", "4722366482869645213695"},
  };
  for (const auto& [src, want] : cases) {
    const std::optional<PyValue> v = python_literal_eval(src);
    ASSERT_TRUE(v.has_value()) << src;
    EXPECT_EQ(python_json_dumps(*v), want) << src;
  }
  for (const char* bad :
       {"1_", "1__0", "01", "-True", "{1, 2}", "b'x'", "1j", "\"\\N{DASH}\"", "'a\nb'", "x", "[1,,]"}) {
    EXPECT_FALSE(python_literal_eval(bad).has_value()) << bad;
  }
  // json.loads keeps a repeated key's first place and last value; ints are unbounded.
  const std::optional<PyValue> j = python_json_loads(R"({"a": 1, "b": 2, "a": 123456789012345678901234567890})");
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(python_json_dumps(*j), R"({"a": 123456789012345678901234567890, "b": 2})");
  EXPECT_EQ(python_int_of_float(1e20), "100000000000000000000");
  EXPECT_EQ(python_int_of_float(-3.0), "-3");
}

}  // namespace
}  // namespace tessera::server
