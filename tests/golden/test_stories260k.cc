// stories260K greedy output against the upstream-documented golden run (256 positions),
// from the GGUF and from the HF safetensors conversion of the same weights.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "common/test_paths.h"
#include "engine/generator.h"
#include "model/model.h"

namespace tessera {
namespace {

class Stories260K : public ::testing::TestWithParam<std::string> {};

TEST_P(Stories260K, GreedyMatchesUpstream256Positions) {
  const std::string dir = testing::test_data() + "/stories260K";
  const std::string golden_path = dir + "/golden-greedy-256.json";
  if (!testing::exists(golden_path)) GTEST_SKIP() << "missing " << golden_path;
  std::ifstream in(golden_path);
  const auto golden = nlohmann::json::parse(in);
  const int64_t steps = golden["steps"].get<int64_t>();

  auto model = load_model(dir + "/" + GetParam());
  ASSERT_TRUE(model.ok()) << model.error();
  Generator generator(**model);
  int cases = 0;
  for (const auto& [name, c] : golden["cases"].items()) {
    const auto prompt = c["prompt_ids"].get<std::vector<int32_t>>();
    const auto expected = c["greedy_ids"].get<std::vector<int32_t>>();
    SamplingParams params;
    params.temperature = 0;
    params.ignore_eos = true;  // the upstream runner stops only on BOS, which never comes
    params.max_tokens = steps + 1 - static_cast<int64_t>(prompt.size());
    auto out = generator.generate(prompt, params);
    ASSERT_TRUE(out.ok()) << out.error();
    std::vector<int32_t> got = prompt;
    const auto& ids = out->outputs[0].token_ids;
    got.insert(got.end(), ids.begin(), ids.end());
    EXPECT_EQ(got, expected) << "case " << name;
    ++cases;
  }
  EXPECT_EQ(cases, 2);
}

INSTANTIATE_TEST_SUITE_P(Formats, Stories260K,
                         ::testing::Values("stories260K-f32.gguf", "hf"),
                         [](const auto& info) { return info.param == "hf" ? std::string("HfSafetensors") : std::string("Gguf"); });

}  // namespace
}  // namespace tessera
