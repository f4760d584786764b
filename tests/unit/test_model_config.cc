#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "config/model_config.h"

namespace tessera {
namespace {

nlohmann::json llama_json() {
  return nlohmann::json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "vocab_size": 128256, "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "tie_word_embeddings": false, "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009],
    "hidden_act": "silu"})");
}

TEST(ModelConfig, Llama31) {
  auto c = model_config_from_hf_json(llama_json(), "config.json");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->architecture, "llama");
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_EQ(c->num_key_value_heads, 8);
  EXPECT_EQ(c->rope_scaling.type, RopeScaling::Type::kLlama3);
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 8.0);
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(c->bos_token_id, 128000);
  EXPECT_EQ(c->rope_layout, RopeLayout::kHalf);
  EXPECT_FALSE(c->attention_bias);
}

TEST(ModelConfig, RopeParametersOfTransformers5) {
  auto j = llama_json();
  j.erase("rope_scaling");
  j.erase("rope_theta");
  j["rope_parameters"] = {{"rope_type", "llama3"}, {"rope_theta", 500000.0}, {"factor", 8.0},
                          {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                          {"original_max_position_embeddings", 64}};
  auto c = model_config_from_hf_json(j, "config.json");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_DOUBLE_EQ(c->rope_theta, 500000.0);
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 64);
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}};
  c = model_config_from_hf_json(j, "config.json");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->rope_scaling.type, RopeScaling::Type::kNone);
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
}

TEST(ModelConfig, Qwen2AndQwen3Flags) {
  auto j = llama_json();
  j["architectures"] = {"Qwen2ForCausalLM"};
  j.erase("rope_scaling");
  auto c = model_config_from_hf_json(j, "config.json");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_TRUE(c->attention_bias);
  EXPECT_FALSE(c->qk_norm);
  j["architectures"] = {"Qwen3ForCausalLM"};
  j["head_dim"] = 256;
  c = model_config_from_hf_json(j, "config.json");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->attention_bias);
  EXPECT_EQ(c->head_dim, 256);
}

void expect_error(const nlohmann::json& j, const std::string& needle) {
  auto c = model_config_from_hf_json(j, "cfg.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find(needle), std::string::npos) << c.error();
  EXPECT_EQ(c.error().rfind("cfg.json", 0), 0u) << c.error();
}

TEST(ModelConfig, Phi3WindowAndTheVariantsItRefuses) {
  auto j = llama_json();
  j["architectures"] = {"Phi3ForCausalLM"};
  j.erase("rope_scaling");
  j["sliding_window"] = 2047;  // Phi-3-mini-4k's: applied without use_sliding_window
  auto c = model_config_from_hf_json(j, "config.json");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->architecture, "phi3");
  EXPECT_EQ(c->sliding_window, 2047);
  j["rope_scaling"] = {{"type", "longrope"}, {"short_factor", {1.0}}, {"long_factor", {1.0}}};
  expect_error(j, "unsupported rope scaling type 'longrope'");
  j.erase("rope_scaling");
  j["partial_rotary_factor"] = 0.75;  // Phi-4-mini's
  expect_error(j, "partial_rotary_factor 0.750000 is not supported");
}

TEST(ModelConfig, ErrorsNameTheProblem) {
  auto j = llama_json();
  j["architectures"] = {"GPT2LMHeadModel"};
  j["model_type"] = "gpt2";
  expect_error(j, "unsupported architecture");
  j = llama_json();
  j.erase("hidden_size");
  expect_error(j, "hidden_size");
  j = llama_json();
  j["num_key_value_heads"] = 7;
  expect_error(j, "multiple of num_key_value_heads");
  j = llama_json();
  j["hidden_size"] = "4096";
  expect_error(j, "must be an integer");
  j = llama_json();
  j["num_attention_heads"] = -4;
  expect_error(j, "must be positive");
  j = llama_json();
  j["vocab_size"] = int64_t{1} << 40;
  expect_error(j, "implausibly large");
  j = llama_json();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expect_error(j, "unsupported rope scaling type 'yarn'");
  j = llama_json();
  j["hidden_act"] = "gelu";
  expect_error(j, "hidden_act");
  expect_error(nlohmann::json::array(), "expected a JSON object");
}

TEST(ModelConfig, MissingFileIsAnError) {
  auto c = load_hf_config("/nonexistent/dir/config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("/nonexistent/dir/config.json"), std::string::npos);
}

}  // namespace
}  // namespace tessera
