// Broken checkpoints and bad requests give clear errors, never a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/test_paths.h"
#include "engine/generator.h"
#include "model/model.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

class ModelErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = testing::test_data() + "/stories260K";
    if (!testing::exists(src_)) GTEST_SKIP() << "missing " << src_;
    dir_ = fs::temp_directory_path() / ("tessera_model_errors_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(src_ + "/hf/model.safetensors", dir_ / "model.safetensors");
    std::ifstream in(src_ + "/hf/config.json");
    config_ = nlohmann::json::parse(in);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void write_config(const nlohmann::json& j) { std::ofstream(dir_ / "config.json") << j.dump(); }
  std::string load_error() {
    auto m = load_model(dir_.string());
    EXPECT_FALSE(m.ok());
    return m.ok() ? "" : m.error();
  }

  std::string src_;
  fs::path dir_;
  nlohmann::json config_;
};

TEST_F(ModelErrors, MoreLayersThanTheFileHolds) {
  config_["num_hidden_layers"] = 6;
  write_config(config_);
  const std::string err = load_error();
  EXPECT_NE(err.find("missing tensor 'model.layers.5."), std::string::npos) << err;
}

TEST_F(ModelErrors, ShapeMismatch) {
  config_["intermediate_size"] = 200;
  write_config(config_);
  const std::string err = load_error();
  EXPECT_NE(err.find("has shape [172, 64], expected [200, 64]"), std::string::npos) << err;
}

TEST_F(ModelErrors, Phi3WithoutItsFusedWeightsNamesTheTensor) {
  config_["architectures"] = {"Phi3ForCausalLM"};  // a Llama checkpoint: separate q/k/v
  write_config(config_);
  const std::string err = load_error();
  EXPECT_NE(err.find("missing tensor 'model.layers.0.self_attn.qkv_proj.weight'"), std::string::npos) << err;
}

TEST_F(ModelErrors, MissingConfig) {
  const std::string err = load_error();
  EXPECT_NE(err.find("config.json"), std::string::npos) << err;
}

TEST_F(ModelErrors, TruncatedWeights) {
  write_config(config_);
  fs::resize_file(dir_ / "model.safetensors", fs::file_size(dir_ / "model.safetensors") / 2);
  const std::string err = load_error();
  EXPECT_NE(err.find("model.safetensors"), std::string::npos) << err;
}

TEST_F(ModelErrors, TruncatedGguf) {
  const fs::path gguf = dir_ / "truncated.gguf";
  fs::copy_file(src_ + "/stories260K-f32.gguf", gguf);
  fs::resize_file(gguf, fs::file_size(gguf) - 1000);
  auto m = load_model(gguf.string());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("truncated.gguf"), std::string::npos) << m.error();
}

TEST_F(ModelErrors, BadRequestsFailAlone) {
  auto model = load_model(src_ + "/stories260K-f32.gguf");
  ASSERT_TRUE(model.ok()) << model.error();
  Generator g(**model);
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 4;
  auto out = g.generate({1, 512}, p);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().find("prompt token id 512 is out of vocabulary [0, 512)"), std::string::npos)
      << out.error();
  out = g.generate({}, p);
  ASSERT_FALSE(out.ok());
  out = g.generate({1, -3}, p);
  ASSERT_FALSE(out.ok());
  p.max_tokens = 600;
  out = g.generate({1, 2, 3}, p);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().find("maximum length 512"), std::string::npos) << out.error();
  p.max_tokens = -1;
  out = g.generate({1}, p);
  ASSERT_FALSE(out.ok());
  // The generator still serves good requests afterwards.
  p.max_tokens = 4;
  out = g.generate({1, 403}, p);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out->outputs[0].token_ids.size(), 4u);
}

}  // namespace
}  // namespace tessera
