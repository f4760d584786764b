// Golden tests: real chat templates rendered by our engine must match Python jinja2
// byte for byte (tests/data/chat_templates, made by
// tools/reference/render_chat_templates.py), and so must the 40 cases of
// huggingface.js' hf-jinja-cases.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "common/test_paths.h"

namespace tessera {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Where two renderings first differ, with some context, for the failure message.
std::string first_difference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  const size_t from = i > 40 ? i - 40 : 0;
  return "at byte " + std::to_string(i) + "\n  want: " + nlohmann::json(want.substr(from, 120)).dump() +
         "\n  got:  " + nlohmann::json(got.substr(from, 120)).dump();
}

// ../shared/data is not part of the repository: like the other real-data tests, skip (with
// the reason) when it is absent altogether; a missing file inside it is a failure.
bool shared_templates_present() { return testing::exists(testing::shared_data() + "/chat-templates"); }

TEST(ChatTemplateGolden, RealTemplatesMatchJinja2) {
  if (!shared_templates_present()) GTEST_SKIP() << "no " << testing::shared_data() << "/chat-templates";
  const std::string dir = testing::test_data() + "/chat_templates";
  ASSERT_TRUE(testing::exists(dir + "/conversations.json")) << dir;
  const auto convs = nlohmann::ordered_json::parse(slurp(dir + "/conversations.json"));
  auto now = parse_iso8601_utc(convs["now"].get<std::string>());
  ASSERT_TRUE(now.ok());
  jinja::RenderOptions options;
  options.now = *now;

  int total = 0, passed = 0, templates = 0;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string fname = e.path().filename().string();
    if (e.path().extension() == ".json" && fname != "conversations.json" && !fname.starts_with("hf_")) {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    const auto golden = nlohmann::json::parse(slurp(file.string()));
    const std::string rel = golden["template"];
    const std::string path = testing::shared_data() + "/" + rel;
    if (!testing::exists(path)) {
      ADD_FAILURE() << "missing template " << path;
      continue;
    }
    ++templates;
    auto opt_str = [](const nlohmann::json& j) -> std::optional<std::string> {
      return j.is_string() ? std::optional<std::string>(j.get<std::string>()) : std::nullopt;
    };
    Result<ChatTemplate> tmpl = rel.ends_with(".json")
                                    ? ChatTemplate::from_file(path)
                                    : ChatTemplate::from_string(slurp(path), opt_str(golden["bos_token"]),
                                                                opt_str(golden["eos_token"]));
    ASSERT_TRUE(tmpl.ok()) << rel << ": " << tmpl.error();
    EXPECT_EQ(tmpl->bos_token(), opt_str(golden["bos_token"])) << rel;
    EXPECT_EQ(tmpl->eos_token(), opt_str(golden["eos_token"])) << rel;
    for (const auto& [name, want] : golden["results"].items()) {
      ++total;
      auto got = tmpl->render(convs["conversations"][name], options);
      if (want.contains("error")) {
        if (got.ok()) {
          ADD_FAILURE() << rel << " / " << name << ": jinja2 raised (" << want["error"].get<std::string>()
                        << ") but we rendered " << nlohmann::json(*got).dump().substr(0, 200);
        } else {
          ++passed;
        }
        continue;
      }
      if (!got.ok()) {
        ADD_FAILURE() << rel << " / " << name << ": " << got.error();
      } else if (*got != want["output"].get<std::string>()) {
        ADD_FAILURE() << rel << " / " << name << ": differs " << first_difference(want["output"], *got);
      } else {
        ++passed;
      }
    }
  }
  std::printf("chat template goldens: %d/%d cases over %d templates match jinja2\n", passed, total, templates);
  EXPECT_GE(templates, 50);
  EXPECT_EQ(passed, total);
}

TEST(ChatTemplateGolden, HfJinjaCases) {
  if (!shared_templates_present()) GTEST_SKIP() << "no " << testing::shared_data() << "/chat-templates";
  const std::string path = testing::shared_data() + "/chat-templates/hf-jinja-cases.json";
  ASSERT_TRUE(testing::exists(path)) << path;
  const auto cases = nlohmann::ordered_json::parse(slurp(path));
  // "2025-07-10T12:00:00.000Z"
  auto now = parse_iso8601_utc(cases["mocked_now"].get<std::string>());
  ASSERT_TRUE(now.ok()) << now.error();
  jinja::RenderOptions options;
  options.now = *now;
  // The targets come from huggingface.js; where Python jinja2 renders differently
  // (render_chat_templates.py records those cases), we follow Python.
  const auto overrides =
      nlohmann::json::parse(slurp(testing::test_data() + "/chat_templates/hf_jinja_cases_python.json"));
  int total = 0, passed = 0, python_overrides = 0;
  for (const char* group : {"default", "custom"}) {
    for (const auto& [name, c] : cases[group].items()) {
      ++total;
      auto tmpl = jinja::Template::parse(c["chat_template"].get<std::string>());
      if (!tmpl.ok()) {
        ADD_FAILURE() << name << ": " << tmpl.error();
        continue;
      }
      auto ctx = jinja::value_from_json(c["data"]);
      ASSERT_TRUE(ctx.ok());
      auto got = tmpl->render(*ctx, options);
      std::string want = c["target"];
      if (overrides.contains(name)) {
        ASSERT_EQ(overrides[name]["js_target"], want) << name;
        ASSERT_TRUE(overrides[name]["python_jinja2"].contains("output")) << name;
        want = overrides[name]["python_jinja2"]["output"];
        ++python_overrides;
      }
      if (!got.ok()) {
        ADD_FAILURE() << name << ": " << got.error();
      } else if (*got != want) {
        ADD_FAILURE() << name << ": differs " << first_difference(want, *got);
      } else {
        ++passed;
      }
    }
  }
  std::printf("hf-jinja-cases: %d/%d match (%d of them expect Python jinja2's rendering, not the JS target)\n",
              passed, total, python_overrides);
  EXPECT_EQ(total, 40);
  EXPECT_LE(python_overrides, 1);
  EXPECT_EQ(passed, total);
}

}  // namespace
}  // namespace tessera
