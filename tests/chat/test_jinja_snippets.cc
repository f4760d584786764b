// Python jinja2's rendering of ~220 small templates, one feature each (expressions,
// filters, tests, methods, statements, whitespace control, errors), made by
// tools/reference/render_chat_templates.py from tools/reference/jinja_snippets.py.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "chat/jinja/template.h"
#include "common/test_paths.h"

namespace tessera::jinja {
namespace {

TEST(JinjaSnippets, MatchPythonJinja2) {
  const std::string path = tessera::testing::test_data() + "/jinja_snippets.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  const auto golden = nlohmann::ordered_json::parse(ss.str());
  auto context = value_from_json(golden["context"]);
  ASSERT_TRUE(context.ok());
  auto now = parse_iso8601_utc(golden["now"].get<std::string>());
  ASSERT_TRUE(now.ok());
  RenderOptions options;
  options.now = *now;
  int passed = 0, total = 0;
  for (const auto& s : golden["snippets"]) {
    ++total;
    const std::string src = s["template"];
    const auto& want = s["result"];
    auto tmpl = Template::parse(src);
    Result<std::string> got = tmpl.ok() ? tmpl->render(*context, options) : Result<std::string>(tmpl.status());
    if (want.contains("error")) {
      if (got.ok()) {
        ADD_FAILURE() << "template: " << nlohmann::json(src).dump() << "\njinja2 raised "
                      << want["error"].get<std::string>() << "\nwe rendered: " << nlohmann::json(*got).dump();
      } else {
        // Every error names its line and column.
        EXPECT_NE(got.error().find("line "), std::string::npos) << got.error();
        ++passed;
      }
    } else if (!got.ok()) {
      ADD_FAILURE() << "template: " << nlohmann::json(src).dump() << "\nerror: " << got.error();
    } else if (*got != want["output"].get<std::string>()) {
      ADD_FAILURE() << "template: " << nlohmann::json(src).dump() << "\nwant: " << want["output"].dump()
                    << "\ngot:  " << nlohmann::json(*got).dump();
    } else {
      ++passed;
    }
  }
  std::printf("jinja snippets: %d/%d match Python jinja2\n", passed, total);
  EXPECT_GT(total, 150);
}

}  // namespace
}  // namespace tessera::jinja
