// ChatTemplate: loading from tokenizer_config.json / GGUF / .jinja, HF's variables, and
// the `tessera template render` CLI.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "common/test_paths.h"
#include "loader/gguf.h"
#include "unit/test_file_writers.h"

namespace tessera {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

std::string render_or_error(const ChatTemplate& t, const ordered_json& ctx) {
  auto r = t.render(ctx);
  return r.ok() ? *r : "ERROR: " + r.error();
}

TEST(ChatTemplate, TokenizerConfigStringAndAddedTokenObjects) {
  json config = {{"chat_template", "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}"},
                 {"bos_token", {{"__type", "AddedToken"}, {"content", "<B>"}}},
                 {"eos_token", "<E>"}};
  auto t = ChatTemplate::from_tokenizer_config(config);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->bos_token(), "<B>");
  EXPECT_EQ(t->eos_token(), "<E>");
  ordered_json ctx = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  EXPECT_EQ(render_or_error(*t, ctx), "<B>hi<E>");
  // The context overrides the file's tokens.
  ctx["eos_token"] = "[end]";
  EXPECT_EQ(render_or_error(*t, ctx), "<B>hi[end]");
}

TEST(ChatTemplate, TokenizerConfigTemplateList) {
  json config = {{"chat_template", json::array({{{"name", "tool_use"}, {"template", "TOOLS"}},
                                               {{"name", "default"}, {"template", "DEFAULT"}}})},
                 {"bos_token", nullptr}};
  auto t = ChatTemplate::from_tokenizer_config(config);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->source(), "DEFAULT");
  EXPECT_FALSE(t->bos_token().has_value());
  config["chat_template"] = json::array({{{"name", "tool_use"}, {"template", "x"}}});
  EXPECT_FALSE(ChatTemplate::from_tokenizer_config(config).ok());
  EXPECT_FALSE(ChatTemplate::from_tokenizer_config(json{{"bos_token", "<s>"}}).ok());
  EXPECT_FALSE(ChatTemplate::from_tokenizer_config(json{{"chat_template", 3}}).ok());
  EXPECT_FALSE(ChatTemplate::from_tokenizer_config(json{{"chat_template", "{% if %}"}}).ok());
}

TEST(ChatTemplate, HfVariablesAndMessageNormalization) {
  auto t = ChatTemplate::from_string(
      "{{ tools is none }}{{ documents is none }}{{ add_generation_prompt }}{{ bos_token is defined }}|"
      "{% for m in messages %}{{ m|tojson }};{% endfor %}{{ enable_thinking }}");
  ASSERT_TRUE(t.ok());
  ordered_json ctx = {{"messages",
                       {{{"role", "assistant"}, {"content", nullptr}, {"reasoning", "r1"}},
                        {{"role", "user"}, {"content", "x"}}}},
                      {"enable_thinking", false}};
  // As transformers 5 does: null keys dropped, reasoning offered as thinking and reasoning_content.
  EXPECT_EQ(render_or_error(*t, ctx),
            "TrueTrueFalseFalse|{\"thinking\": \"r1\", \"role\": \"assistant\", \"reasoning\": \"r1\", "
            "\"reasoning_content\": \"r1\"};{\"role\": \"user\", \"content\": \"x\"};False");
  EXPECT_FALSE(t->render(ordered_json::array()).ok());
}

TEST(ChatTemplate, FromGguf) {
  test::TempDir dir;
  test::GgufWriter w;
  w.kv_string("general.architecture", "llama");
  w.kv_string("tokenizer.chat_template", "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}");
  w.kv_array("tokenizer.ggml.tokens", test::gguf_string_array({"<unk>", "<s>", "</s>", "a"}));
  w.kv_u32("tokenizer.ggml.bos_token_id", 1);
  w.kv_u32("tokenizer.ggml.eos_token_id", 2);
  const test::Bytes bytes = w.build();
  const std::string path = dir.write("model.gguf", std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  auto t = ChatTemplate::from_file(path);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->bos_token(), "<s>");
  EXPECT_EQ(t->eos_token(), "</s>");
  EXPECT_EQ(render_or_error(*t, {{"messages", {{{"role", "user"}, {"content", "q"}}}}}), "<s>q</s>");

  test::GgufWriter none;
  none.kv_string("general.architecture", "llama");
  const test::Bytes b2 = none.build();
  const std::string p2 = dir.write("none.gguf", std::string(reinterpret_cast<const char*>(b2.data()), b2.size()));
  auto missing = ChatTemplate::from_file(p2);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("tokenizer.chat_template"), std::string::npos);
}

TEST(ChatTemplate, ParsesIsoTimes) {
  EXPECT_EQ(*parse_iso8601_utc("2025-07-10T12:00:00Z"), 1752148800);
  EXPECT_EQ(*parse_iso8601_utc("2025-07-10T12:00:00.000Z"), 1752148800);
  EXPECT_EQ(*parse_iso8601_utc("2025-07-10"), 1752105600);
  EXPECT_FALSE(parse_iso8601_utc("yesterday").ok());
  EXPECT_FALSE(parse_iso8601_utc("2025-07-10T12:00:00+02:00").ok());
}

// Runs the CLI; returns the exit code and fills stdout/stderr.
int run_cli(const std::string& args, std::string* out, std::string* err) {
  test::TempDir dir;
  const std::string out_path = dir.write("stdout", "");
  const std::string err_path = dir.write("stderr", "");
  const std::string cmd = testing::env_or("TESSERA_BIN", "build/bin/tessera") + " " + args + " >" + out_path + " 2>" + err_path;
  const int status = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  *out = slurp(out_path);
  *err = slurp(err_path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(TemplateCli, RendersExactlyAndReportsErrors) {
  const std::string bin = testing::env_or("TESSERA_BIN", "");
  if (!testing::exists(bin)) GTEST_SKIP() << "tessera binary not built";
  test::TempDir dir;
  const std::string tmpl = dir.write("t.jinja", "{{ bos_token }}{{ messages[0].content }} {{ strftime_now('%d %b %Y') }}\n\n");
  const std::string ctx = dir.write("c.json", R"({"messages": [{"role": "user", "content": "héllo"}], "bos_token": "<s>"})");
  std::string out, err;
  EXPECT_EQ(run_cli("template render --template " + tmpl + " --now 2025-07-10T12:00:00Z --context " + ctx, &out, &err), 0)
      << err;
  EXPECT_EQ(out, "<s>héllo 10 Jul 2025\n");  // jinja2 drops one trailing newline; we add none

  const std::string config = dir.write("tokenizer_config.json",
                                       R"({"chat_template": "{{ bos_token }}|{{ eos_token }}", "bos_token": "<B>", "eos_token": {"content": "<E>"}})");
  const std::string empty = dir.write("empty.json", "{}");
  EXPECT_EQ(run_cli("template render --template " + config + " --context " + empty, &out, &err), 0) << err;
  EXPECT_EQ(out, "<B>|<E>");

  const std::string bad = dir.write("bad.jinja", "line1\n{{ raise_exception('nope') }}");
  EXPECT_EQ(run_cli("template render --template " + bad + " --context " + empty, &out, &err), 1);
  EXPECT_EQ(out, "");
  EXPECT_NE(err.find("line 2, column 4: nope"), std::string::npos) << err;

  const std::string syntax = dir.write("syntax.jinja", "{% for %}");
  EXPECT_EQ(run_cli("template render --template " + syntax + " --context " + empty, &out, &err), 1);
  EXPECT_NE(err.find("line 1"), std::string::npos) << err;
  EXPECT_EQ(run_cli("template render --template " + dir.path() + "/missing.jinja --context " + empty, &out, &err), 1);
  EXPECT_EQ(run_cli("template render --template " + tmpl + " --context " + tmpl, &out, &err), 1);
}

}  // namespace
}  // namespace tessera
