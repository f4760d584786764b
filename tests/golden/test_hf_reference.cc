// Greedy generations against Hugging Face transformers (goldens made by
// tools/reference/hf_greedy_reference.py): each generated token is HF's top-1, or where
// the two differ each side's token is in the other's top-5, after which the sequences
// diverge and comparison stops (vLLM's check_logprobs_close). On agreeing positions the
// token's logprob is within 0.02 of HF's for float weights and 0.15 for quantized weights
// with the default precise activations (HF runs the dequantized weights in fp32). Quantized
// weights also run with int8 activations (as llama.cpp does), bound 0.40: llama.cpp
// itself deviates by up to 0.23 on the same goldens (tools/reference/check_gguf_llamacpp.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/hf_golden.h"
#include "common/test_paths.h"
#include "backend/cpu/matmul.h"
#include "engine/generator.h"
#include "model/model.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> golden_files() {
  std::vector<std::string> files;
  std::error_code ec;
  const fs::path dir = fs::path(testing::test_data()) / "golden";
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("hf-", 0) == 0 && e.path().extension() == ".json") files.push_back(name);
  }
  std::sort(files.begin(), files.end());
  return files;
}


bool is_quantized(const nlohmann::json& source) {
  if (!source.contains("tensor_types")) return false;
  for (const auto& t : source["tensor_types"]) {
    const std::string s = t.get<std::string>();
    if (s != "F32" && s != "F16" && s != "BF16") return true;
  }
  return false;
}

void check_against_golden(Model& model, const nlohmann::json& golden, double tolerance, const char* mode,
                          std::optional<KvDtype> kv_dtype) {
  Generator generator(model, kv_dtype);
  SamplingParams params;
  params.temperature = 0;
  params.ignore_eos = true;
  params.max_tokens = golden["max_tokens"].get<int64_t>();
  params.logprobs = 5;
  int compared = 0, diverged = 0;
  double max_diff = 0;
  for (const auto& c : golden["cases"]) {
    const auto prompt = c["prompt_token_ids"].get<std::vector<int32_t>>();
    const auto ref_ids = c["token_ids"].get<std::vector<int32_t>>();
    auto out = generator.generate(prompt, params);
    ASSERT_TRUE(out.ok()) << out.error();
    const CompletionOutput& o = out->outputs[0];
    ASSERT_EQ(o.token_ids.size(), ref_ids.size());
    for (size_t i = 0; i < ref_ids.size(); ++i) {
      const auto& ref_top = c["logprobs"][i];  // {"id": logprob}, HF's top-K
      const PositionLogprobs& ours = o.logprobs[i];
      const int32_t tok = o.token_ids[i];
      if (tok == ref_ids[i]) {
        const double diff = std::fabs(ours[0].second - c["token_logprobs"][i].get<double>());
        max_diff = std::max(max_diff, diff);
        EXPECT_LE(diff, tolerance) << "prompt of " << prompt.size() << " tokens, position " << i;
        ++compared;
        continue;
      }
      // Divergence: each side's choice must be in the other's top-5.
      std::vector<std::pair<double, int32_t>> ref_sorted;
      for (const auto& [id, lp] : ref_top.items()) ref_sorted.emplace_back(lp.get<double>(), std::stoi(id));
      std::sort(ref_sorted.rbegin(), ref_sorted.rend());
      bool ours_in_ref = false;
      for (size_t k = 0; k < std::min<size_t>(5, ref_sorted.size()); ++k) ours_in_ref |= ref_sorted[k].second == tok;
      bool ref_in_ours = false;
      for (size_t k = 0; k < std::min<size_t>(5, ours.size()); ++k) ref_in_ours |= ours[k].first == ref_ids[i];
      EXPECT_TRUE(ours_in_ref && ref_in_ours)
          << "prompt of " << prompt.size() << " tokens, position " << i << ": ours " << tok
          << ", HF " << ref_ids[i];
      ++diverged;
      break;
    }
  }
  std::printf("[ %s, %s activations, %s KV ] %d positions compared, %d cases diverged, max |logprob diff| %.5f (tolerance %.2f)\n",
              golden["model"].get<std::string>().c_str(), mode, kv_dtype_name(kv_dtype.value_or(model.auto_kv_dtype())), compared, diverged, max_diff, tolerance);
  EXPECT_GT(compared, 0);
}

class HfReference : public ::testing::TestWithParam<std::string> {};

TEST_P(HfReference, GreedyTokensAndLogprobsMatch) {
  std::ifstream in(fs::path(testing::test_data()) / "golden" / GetParam());
  const auto golden = nlohmann::json::parse(in);
  const auto& source = golden["source"];
  const std::string path = testing::golden_model_path(source);
  if (!testing::exists(path)) GTEST_SKIP() << "model not available: " << path;
  auto model = load_model(path);
  ASSERT_TRUE(model.ok()) << model.error();
  std::vector<std::pair<cpu::ActivationPrecision, double>> modes = {{cpu::ActivationPrecision::kInt8, 0.02}};
  if (is_quantized(source)) {
    modes = {{cpu::ActivationPrecision::kPrecise, 0.15}, {cpu::ActivationPrecision::kInt8, 0.40}};
  }
  for (const auto& [precision, tolerance] : modes) {
    cpu::set_activation_precision(precision);
    const char* mode = !is_quantized(source) ? "float-weight"
                       : precision == cpu::ActivationPrecision::kInt8 ? "int8" : "precise";
    // The engine's default KV cache (float16 for quantized weights, float32 for float32
    // ones), except under int8 activations, which are held to HF with float32 K/V: with
    // float16 K/V on top, one of SmolLM2's cases leaves HF's top 5 where it diverges
    // (docs/benchmarks.md, "The host KV cache's element type").
    const std::optional<KvDtype> kv_dtype =
        precision == cpu::ActivationPrecision::kInt8 && is_quantized(source) ? std::optional(KvDtype::kFloat32)
                                                                              : std::nullopt;
    check_against_golden(**model, golden, tolerance, mode, kv_dtype);
  }
  cpu::set_activation_precision(cpu::ActivationPrecision::kPrecise);
}

// dtype float16 / bfloat16 on the CPU (vLLM's --dtype): the float weights converted at load,
// the KV cache in the same type, activations fp32; still HF's (fp32) tokens by the same
// criterion, logprobs within what rounding every weight to 11 (float16) or 8 (bfloat16)
// significant bits moves them on these models.
TEST_P(HfReference, SixteenBitWeightsStayClose) {
  std::ifstream in(fs::path(testing::test_data()) / "golden" / GetParam());
  const auto golden = nlohmann::json::parse(in);
  const auto& source = golden["source"];
  const std::string path = testing::golden_model_path(source);
  if (!testing::exists(path)) GTEST_SKIP() << "model not available: " << path;
  if (is_quantized(source)) GTEST_SKIP() << "quantized weights stay as stored";
  for (const auto& [dtype, kv, tolerance] : {std::tuple{DType::kF16, KvDtype::kFloat16, 0.1},
                                             std::tuple{DType::kBF16, KvDtype::kBfloat16, 0.5}}) {
    auto model = load_model(path, dtype);
    ASSERT_TRUE(model.ok()) << model.error();
    EXPECT_EQ((*model)->weight_dtype(), dtype);
    EXPECT_EQ((*model)->auto_kv_dtype(), kv);
    check_against_golden(**model, golden, tolerance, dtype == DType::kF16 ? "float16-weight" : "bfloat16-weight", kv);
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, HfReference, ::testing::ValuesIn(golden_files()),
                         [](const auto& info) {
                           std::string n = info.param.substr(3, info.param.size() - 8);
                           for (char& ch : n) if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace tessera
