// ModelConfig: the shape and hyper-parameters of a decoder-only model, read from a
// Hugging Face config.json or from GGUF metadata.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "config/rope_layout.h"

namespace tessera {

class GgufFile;

struct RopeScaling {
  enum class Type { kNone, kLinear, kLlama3 };
  Type type = Type::kNone;
  double factor = 1.0;
  double low_freq_factor = 1.0;                    // llama3
  double high_freq_factor = 4.0;                   // llama3
  int64_t original_max_position_embeddings = 8192;  // llama3
};

struct ModelConfig {
  std::string architecture;  // canonical name: llama, mistral, qwen2, qwen3
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  RopeLayout rope_layout = RopeLayout::kHalf;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections carry a bias (Qwen2)
  bool qk_norm = false;         // per-head RMSNorm on q and k (Qwen3)
  std::optional<int64_t> sliding_window;
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;

  // Checks internal consistency (positive sizes, heads divide, ...). Names `source` in errors.
  Status validate(const std::string& source) const;
};

// Maps an HF architectures[] entry or model_type / GGUF general.architecture to our name.
std::optional<std::string> canonical_architecture(const std::string& name);

Result<ModelConfig> model_config_from_hf_json(const nlohmann::json& j, const std::string& source);
// `path` is a config.json or a directory holding one (and maybe generation_config.json).
Result<ModelConfig> load_hf_config(const std::string& path);
Result<ModelConfig> model_config_from_gguf(const GgufFile& gguf);

}  // namespace tessera
