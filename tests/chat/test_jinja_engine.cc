// Engine behaviour the goldens do not pin down: error positions, resource limits on
// hostile templates, and the parser's nesting bounds.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "chat/chat_template.h"
#include "chat/jinja/template.h"
#include "common/test_paths.h"

namespace tessera::jinja {
namespace {

Result<std::string> render(const std::string& src, const RenderOptions& options = {},
                           const nlohmann::ordered_json& ctx = nlohmann::ordered_json::object()) {
  auto t = Template::parse(src);
  if (!t.ok()) return t.status();
  auto v = value_from_json(ctx);
  if (!v.ok()) return v.status();
  return t->render(*v, options);
}

std::string error_of(const std::string& src, const RenderOptions& options = {}) {
  auto r = render(src, options);
  EXPECT_FALSE(r.ok()) << "rendered: " << (r.ok() ? *r : "");
  return r.ok() ? "" : r.error();
}

RenderOptions small_limits() {
  RenderOptions o;
  o.limits.max_steps = 100'000;
  o.limits.max_output_bytes = 64 << 10;
  o.limits.max_string_bytes = 64 << 10;
  o.limits.max_list_items = 10'000;
  o.limits.max_call_depth = 20;
  return o;
}

TEST(JinjaErrors, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(error_of("ok\nline two\n  {{ 1 +* 2 }}"), "template syntax error: line 3, column 9: unexpected '*'");
  EXPECT_EQ(error_of("{% for x in y %}\n{% endif %}"),
            "template syntax error: line 2, column 4: Encountered unknown tag 'endif'.");
  EXPECT_EQ(error_of("a {{ 'open"), "template syntax error: line 1, column 6: unexpected char '''");
  EXPECT_EQ(error_of("\n\n{# never closed"), "template syntax error: line 3, column 1: Missing end of comment tag");
  EXPECT_EQ(error_of("{{ x|no_such_filter }}"), "template syntax error: line 1, column 6: No filter named 'no_such_filter'.");
  EXPECT_NE(error_of("{% if x %}").find("Jinja was looking for the following tags: 'elif' or 'else' or 'endif'"),
            std::string::npos);
}

TEST(JinjaErrors, RuntimeErrorsNameLineAndColumn) {
  EXPECT_EQ(error_of("line1\n{{ raise_exception('Roles must alternate') }}"),
            "template error: line 2, column 4: Roles must alternate");
  EXPECT_EQ(error_of("{% for m in [1] %}\n  {{ m.a.b }}{% endfor %}"),
            "template error: line 2, column 10: 'int object' has no attribute 'a'");  // at `.b`
  EXPECT_EQ(error_of("{{ 1 }}{{ nope.attr }}"), "template error: line 1, column 16: 'nope' is undefined");
  EXPECT_EQ(error_of("{{ [1].append(2) }}"),
            "template error: line 1, column 8: access to attribute 'append' of 'list' object is unsafe.");
}

// jinja2 only checks that these raise (test_jinja_snippets.cc); here the messages and
// positions must say what is wrong.
TEST(JinjaUnpacking, ErrorsSayWhatAndWhere) {
  EXPECT_EQ(error_of("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"),
            "template error: line 1, column 34: macro 'm' takes not more than 1 argument(s)");
  EXPECT_EQ(error_of("{% macro m(a) %}{% endmacro %}\n{{ m(*[1], b=2) }}"),
            "template error: line 2, column 4: macro 'm' takes no keyword argument 'b'");
  EXPECT_EQ(error_of("{% macro m() %}{% endmacro %}{% call m() %}{% endcall %}"),
            "template error: line 1, column 33: macro 'm' was invoked with two values for the special caller "
            "argument. This is most likely a bug.");
  EXPECT_EQ(error_of("{% macro m() %}{{ caller() }}{% endmacro %}{{ m() }}"),
            "template error: line 1, column 19: No caller defined");
  EXPECT_EQ(error_of("{{ dict(**[1]) }}"), "template error: line 1, column 11: argument after ** must be a mapping, not list");
  EXPECT_EQ(error_of("{{ dict(**nope) }}"), "template error: line 1, column 11: 'nope' is undefined");
  EXPECT_EQ(error_of("{{ dict(*5) }}"), "template error: line 1, column 10: Value after * must be an iterable, not int");
  EXPECT_EQ(error_of("{{ dict(**{1: 2}) }}"), "template error: line 1, column 11: keywords must be strings");
  EXPECT_EQ(error_of("{{ dict(a=1, **{'a': 2}) }}"),
            "template error: line 1, column 16: got multiple values for keyword argument 'a'");
  EXPECT_EQ(error_of("{{ 'a'|replace(*['a', 'b'], old='c') }}"),
            "template error: line 1, column 8: replace() got multiple values for argument 'old'");
  EXPECT_EQ(error_of("{{ f(a=1, a=2) }}"), "template syntax error: line 1, column 11: keyword argument repeated: a");
  EXPECT_EQ(error_of("{{ f(**a, *b) }}"),
            "template syntax error: line 1, column 11: invalid syntax for function call expression");
  EXPECT_EQ(error_of("{% macro m(caller) %}{{ caller() }}{% endmacro %}"),
            "template syntax error: line 1, column 4: When defining macros or call blocks the special \"caller\" "
            "argument must be omitted or be given a default.");
}

TEST(JinjaUnpacking, LargeUnpackingIsBounded) {
  // 100000 positional and 10000 keyword arguments: fine under the default limits.
  EXPECT_EQ(*render("{% macro m() %}{{ varargs|length }} {{ kwargs|length }}{% endmacro %}"
                    "{{ m(*range(100000), **dict(range(20000)|map('string')|batch(2))) }}"),
            "100000 10000");
  // Matching many explicit keywords against a large mapping is charged to the step budget.
  const std::string big = "{% set big = dict(range(2000)|map('string')|batch(2)) %}";
  EXPECT_EQ(*render(big + "{{ dict(k=1, **big)|length }}", small_limits()), "1001");
  std::string many = big + "{{ dict(";
  for (int i = 0; i < 200; ++i) many += "k" + std::to_string(i) + "=1, ";
  EXPECT_NE(error_of(many + "**big) }}", small_limits()).find("step limit"), std::string::npos);
}

TEST(JinjaLimits, RunawayLoopsStop) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(error_of("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                     small_limits())
                .find("step limit"),
            std::string::npos);
  // Default limits too: the work is bounded, not just the output.
  EXPECT_NE(error_of("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
                .find("step limit"),
            std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(120));  // generous: ASan, busy CI
}

TEST(JinjaLimits, OutputAndStringSizesAreBounded) {
  EXPECT_NE(error_of("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", small_limits()).find("limit"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'x' * 1000000000000 }}").find("size limit"), std::string::npos);
  EXPECT_NE(error_of("{{ [1, 2] * 1000000000000 }}").find("size limit"), std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}")
                .find("size limit"),
            std::string::npos);
  EXPECT_NE(error_of("{{ range(1000000) }}").find("MAX_RANGE"), std::string::npos);
  EXPECT_NE(error_of("{{ 'ab'.center(10000000000) }}").find("size limit"), std::string::npos);
  EXPECT_NE(error_of("{{ 2 ** 100 }}").find("overflow"), std::string::npos);
}

TEST(JinjaLimits, RecursionIsBounded) {
  EXPECT_NE(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("recursion"), std::string::npos);
  // A namespace that contains itself: printing would recurse forever.
  EXPECT_NE(error_of("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}").find("recursion"), std::string::npos);
  // Values nesting deeper and deeper through a namespace.
  EXPECT_NE(error_of("{% set ns = namespace(x=1) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}")
                .find("nest too deeply"),
            std::string::npos);
}

TEST(JinjaLimits, ParserNestingIsBounded) {
  for (const char* open : {"(", "[", "{'a': ", "not ", "-", "x|f("}) {
    std::string src = "{{ ";
    for (int i = 0; i < 100000; ++i) src += open;
    EXPECT_NE(error_of(src).find("syntax error"), std::string::npos) << open;
  }
  std::string chain = "{{ 1";
  for (int i = 0; i < 200000; ++i) chain += " + 1";
  EXPECT_NE(error_of(chain + " }}").find("nests too deeply"), std::string::npos);
  std::string filters = "{{ 'x'";
  for (int i = 0; i < 100000; ++i) filters += "|trim";
  EXPECT_NE(error_of(filters + " }}").find("nests too deeply"), std::string::npos);
  std::string blocks;
  for (int i = 0; i < 10000; ++i) blocks += "{% if true %}";
  EXPECT_NE(error_of(blocks).find("nests too deeply"), std::string::npos);
  std::string elifs = "{% if false %}";
  for (int i = 0; i < 10000; ++i) elifs += "{% elif false %}";
  EXPECT_NE(error_of(elifs + "{% endif %}").find("nests too deeply"), std::string::npos);
  // Deep but legal nesting still works.
  EXPECT_EQ(*render("{{ ((((((((((1)))))))))) }}{% if 1 %}{% if 2 %}{% if 3 %}ok{% endif %}{% endif %}{% endif %}"),
            "1ok");
}

TEST(JinjaLimits, HostileBytesFailCleanly) {
  const std::string inputs[] = {
      std::string("{{ \xff\xfe }}"),
      std::string("{{ 'a\0b' }}", 11),
      "{%", "{{", "{#", "{% raw %}", "{{ x.", "{{ 'a' if }}", "{% for %}", "{% set %}", "{% macro %}",
      "{{ )( }}", "{% endfor %}", "}}", "%}", "{{ 1e999 }}", "{{ 99999999999999999999 }}",
      "{{ '\\U0011ffff' }}", "{{ '\\x4' }}",
  };
  for (const std::string& s : inputs) {
    auto r = render(s);
    if (!r.ok()) {
      EXPECT_NE(r.error().find("line"), std::string::npos) << r.error();
    }
  }
  // Invalid UTF-8 in data passes through untouched, and string functions count it safely.
  EXPECT_EQ(*render("\xff{{ s|length }}{{ s[1] }}{{ s|upper }}", {}, {{"s", "a\xc3(b"}}), "\xff" "4\xc3" "A\xc3(B");
}

TEST(JinjaEngine, RenderIsFast) {
  std::string tmpl =
      "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' }}{% if message.content is string %}"
      "{{- message.content | trim }}{% endif %}{{- '<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}"
      "{{- '<|im_start|>assistant\\n' }}{%- endif %}";
  auto t = Template::parse(tmpl);
  ASSERT_TRUE(t.ok());
  nlohmann::ordered_json ctx = {{"add_generation_prompt", true}, {"messages", nlohmann::ordered_json::array()}};
  for (int i = 0; i < 10; ++i) {
    ctx["messages"].push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", std::string(200, 'a' + i)}});
  }
  auto v = value_from_json(ctx);
  const int kRuns = 200;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRuns; ++i) ASSERT_TRUE(t->render(*v).ok());
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / kRuns;
  std::printf("render of a 10-message chat: %.1f us\n", us);  // informational, not asserted

  // A real template (Qwen3: macros, namespaces, tool calls, reasoning) on 10 messages.
  const std::string qwen3 = tessera::testing::shared_data() + "/tokenizers/qwen3/tokenizer_config.json";
  if (!tessera::testing::exists(qwen3)) return;
  auto ct = ChatTemplate::from_file(qwen3);
  ASSERT_TRUE(ct.ok()) << ct.error();
  nlohmann::ordered_json chat = {{"add_generation_prompt", true}, {"messages", nlohmann::ordered_json::array()}};
  chat["messages"].push_back({{"role", "system"}, {"content", "You are helpful."}});
  for (int i = 0; i < 9; ++i) {
    nlohmann::ordered_json m = {{"role", i % 2 ? "assistant" : "user"}, {"content", "message " + std::to_string(i)}};
    if (i % 2) m["reasoning_content"] = "thinking about " + std::to_string(i);
    chat["messages"].push_back(m);
  }
  const auto start2 = std::chrono::steady_clock::now();
  for (int i = 0; i < kRuns; ++i) ASSERT_TRUE(ct->render(chat).ok());
  const double us2 = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start2).count() / kRuns;
  std::printf("render of a 10-message chat with the Qwen3 template: %.1f us\n", us2);
}

}  // namespace
}  // namespace tessera::jinja
