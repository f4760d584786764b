// Every tokenizer.json component on small hand-made files, against the ids and decodings
// HF `tokenizers` gives (tests/data/tokenizer/hf_component_cases.json, written by
// tools/reference/make_hf_tokenizer_cases.py).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hf_test_util.h"
#include "tokenizer/hf_tokenizer.h"

namespace tessera::tokenizer {
namespace {

using testing::read_text;

TEST(HfComponents, MatchHfTokenizers) {
  const std::string path = tessera::testing::test_data() + "/tokenizer/hf_component_cases.json";
  const nlohmann::json doc = nlohmann::json::parse(read_text(path), nullptr, false);
  ASSERT_TRUE(doc.is_object()) << "cannot read " << path;
  const nlohmann::json& models = doc["models"];
  size_t checked = 0;
  for (const auto& tc : doc["tokenizers"]) {
    const std::string name = tc["name"];
    SCOPED_TRACE(name);
    nlohmann::json spec = tc["tokenizer"];
    spec["model"] = models[spec["model"]["$model"].get<std::string>()];
    auto tok = HfTokenizer::from_json(spec.dump());
    ASSERT_TRUE(tok.ok()) << tok.error();
    for (const auto& row : tc["cases"]) {
      const std::string text = row["text"];
      SCOPED_TRACE("text: " + text);
      const std::vector<TokenId> want = row["ids"];
      const std::vector<TokenId> want_special = row.value("ids_special", want);
      auto ids = (*tok)->encode(text, false);
      ASSERT_TRUE(ids.ok()) << ids.error();
      EXPECT_EQ(*ids, want);
      auto ids_special = (*tok)->encode(text, true);
      ASSERT_TRUE(ids_special.ok()) << ids_special.error();
      EXPECT_EQ(*ids_special, want_special);
      if (!row["decoded"].is_null()) {
        // HF skips ids it cannot map (a template may name ids past the vocab); ours rejects
        // them, so they are dropped here before comparing.
        std::vector<TokenId> known;
        for (TokenId id : want_special) {
          if (static_cast<size_t>(id) < (*tok)->vocab_size()) known.push_back(id);
        }
        auto decoded = (*tok)->decode(known, false);
        ASSERT_TRUE(decoded.ok()) << decoded.error();
        EXPECT_EQ(*decoded, row["decoded"].get<std::string>());
        auto skipped = (*tok)->decode(known, true);
        ASSERT_TRUE(skipped.ok()) << skipped.error();
        EXPECT_EQ(*skipped, row.value("decoded_skip", row["decoded"].get<std::string>()));
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000u);
}

}  // namespace
}  // namespace tessera::tokenizer
