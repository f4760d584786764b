// The transformers.js tokenizer cases (shared/data/tokenizer-tests/transformersjs) that apply
// to our tokenizer.json files, as chosen by tools/reference/make_transformersjs_applicable.py.
// Every applicable case must give exactly the expected ids.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "hf_test_util.h"
#include "tokenizer/hf_tokenizer.h"

namespace tessera::tokenizer {
namespace {

using testing::hf_tokenizer_dir;
using testing::read_text;

TEST(HfTransformersJs, ApplicableCasesMatch) {
  const std::string cases_path = tessera::testing::shared_data() +
                                 "/tokenizer-tests/transformersjs/transformersjs-tokenizer-cases.json";
  if (!tessera::testing::exists(cases_path)) GTEST_SKIP() << "no " << cases_path;
  const nlohmann::json cases = nlohmann::json::parse(read_text(cases_path), nullptr, false);
  const nlohmann::json applicable = nlohmann::json::parse(
      read_text(tessera::testing::test_data() + "/tokenizer/transformersjs_applicable.json"),
      nullptr, false);
  ASSERT_TRUE(cases.is_object());
  ASSERT_TRUE(applicable.is_array());
  std::map<std::string, std::unique_ptr<HfTokenizer>> loaded;
  size_t passed = 0, total = 0;
  for (const auto& group : applicable) {
    const std::string name = group["tokenizer"], mode = group["mode"];
    const nlohmann::json& model_cases = cases[group["family"].get<std::string>()][group["model"].get<std::string>()];
    auto& tok = loaded[name];
    if (tok == nullptr) {
      auto t = HfTokenizer::load(hf_tokenizer_dir(name));
      ASSERT_TRUE(t.ok()) << t.error();
      tok = std::move(*t);
    }
    for (const auto& case_name : group["cases"]) {
      const nlohmann::json& c = model_cases[case_name.get<std::string>()];
      std::vector<TokenId> want = c["ids"];
      if (mode == "drop_first" && !want.empty()) want.erase(want.begin());
      auto ids = tok->encode(c["text"].get<std::string>(), mode == "special");
      ASSERT_TRUE(ids.ok()) << ids.error();
      ++total;
      if (*ids == want) {
        ++passed;
      } else {
        ADD_FAILURE() << group["model"] << " / " << case_name << " on " << name;
      }
    }
  }
  std::printf("transformers.js cases: %zu/%zu passed\n", passed, total);
  EXPECT_EQ(total, 151u);  // the applicable set: a shrinking count means a lost case
}

}  // namespace
}  // namespace tessera::tokenizer
