#include "config/model_config.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "loader/gguf.h"

namespace tessera {
namespace {

using nlohmann::json;

// Reads an optional integer field; a present field of the wrong type is an error.
Status read_int(const json& j, const char* key, int64_t* out, const std::string& source,
                bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return required ? Status::error(source + ": missing required field '" + key + "'")
                    : Status();
  }
  if (!it->is_number_integer()) {
    return Status::error(source + ": field '" + key + "' must be an integer");
  }
  *out = it->get<int64_t>();
  return Status();
}

Status read_double(const json& j, const char* key, double* out, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status();
  if (!it->is_number()) return Status::error(source + ": field '" + key + "' must be a number");
  *out = it->get<double>();
  return Status();
}

Status read_bool(const json& j, const char* key, bool* out, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status();
  if (!it->is_boolean()) return Status::error(source + ": field '" + key + "' must be a boolean");
  *out = it->get<bool>();
  return Status();
}

// eos_token_id may be an integer or a list of integers.
Status read_token_ids(const json& j, const char* key, std::vector<int64_t>* out,
                      const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status();
  out->clear();
  if (it->is_number_integer()) {
    out->push_back(it->get<int64_t>());
    return Status();
  }
  if (it->is_array()) {
    for (const auto& v : *it) {
      if (!v.is_number_integer()) {
        return Status::error(source + ": field '" + key + "' must hold integers");
      }
      out->push_back(v.get<int64_t>());
    }
    return Status();
  }
  return Status::error(source + ": field '" + key + "' must be an integer or a list");
}

// HF keeps RoPE settings in `rope_scaling` (+ `rope_theta`) or, since transformers 5,
// in `rope_parameters` (which may also carry rope_theta).
Status read_rope(const json& j, ModelConfig* c, const std::string& source) {
  TESSERA_RETURN_IF_ERROR(read_double(j, "rope_theta", &c->rope_theta, source));
  const json* params = nullptr;
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    auto it = j.find(key);
    if (it != j.end() && !it->is_null()) {
      if (!it->is_object()) return Status::error(source + ": '" + key + "' must be an object");
      params = &*it;
      break;
    }
  }
  if (params == nullptr) return Status();
  TESSERA_RETURN_IF_ERROR(read_double(*params, "rope_theta", &c->rope_theta, source));
  std::string type = "default";
  for (const char* key : {"rope_type", "type"}) {
    auto it = params->find(key);
    if (it != params->end() && it->is_string()) {
      type = it->get<std::string>();
      break;
    }
  }
  RopeScaling& s = c->rope_scaling;
  if (type == "default") {
    s.type = RopeScaling::Type::kNone;
    return Status();
  }
  TESSERA_RETURN_IF_ERROR(read_double(*params, "factor", &s.factor, source));
  if (type == "linear") {
    s.type = RopeScaling::Type::kLinear;
  } else if (type == "llama3") {
    s.type = RopeScaling::Type::kLlama3;
    TESSERA_RETURN_IF_ERROR(read_double(*params, "low_freq_factor", &s.low_freq_factor, source));
    TESSERA_RETURN_IF_ERROR(read_double(*params, "high_freq_factor", &s.high_freq_factor, source));
    TESSERA_RETURN_IF_ERROR(read_int(*params, "original_max_position_embeddings",
                                     &s.original_max_position_embeddings, source, false));
  } else {
    return Status::error(source + ": unsupported rope scaling type '" + type + "'");
  }
  return Status();
}

Result<json> read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::error(path + ": invalid JSON");
  if (!j.is_object()) return Status::error(path + ": expected a JSON object");
  return j;
}

}  // namespace

std::optional<std::string> canonical_architecture(const std::string& name) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"LlamaForCausalLM", "llama"},     {"llama", "llama"},
      {"MistralForCausalLM", "mistral"}, {"mistral", "mistral"},
      {"Qwen2ForCausalLM", "qwen2"},     {"qwen2", "qwen2"},
      {"Qwen3ForCausalLM", "qwen3"},     {"qwen3", "qwen3"},
      {"Phi3ForCausalLM", "phi3"},       {"phi3", "phi3"},
  };
  for (const auto& [from, to] : kNames) {
    if (name == from) return std::string(to);
  }
  return std::nullopt;
}

Status ModelConfig::validate(const std::string& source) const {
  auto positive = [&](int64_t v, const char* what) -> Status {
    if (v <= 0) return Status::error(source + ": " + what + " must be positive, got " + std::to_string(v));
    return Status();
  };
  TESSERA_RETURN_IF_ERROR(positive(vocab_size, "vocab_size"));
  TESSERA_RETURN_IF_ERROR(positive(hidden_size, "hidden_size"));
  TESSERA_RETURN_IF_ERROR(positive(intermediate_size, "intermediate_size"));
  TESSERA_RETURN_IF_ERROR(positive(num_hidden_layers, "num_hidden_layers"));
  TESSERA_RETURN_IF_ERROR(positive(num_attention_heads, "num_attention_heads"));
  TESSERA_RETURN_IF_ERROR(positive(num_key_value_heads, "num_key_value_heads"));
  TESSERA_RETURN_IF_ERROR(positive(head_dim, "head_dim"));
  TESSERA_RETURN_IF_ERROR(positive(max_position_embeddings, "max_position_embeddings"));
  // Generous caps keep hostile configs from asking for absurd allocations.
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  constexpr int64_t kMaxVocab = int64_t{1} << 24;
  if (hidden_size > kMaxDim || intermediate_size > kMaxDim || head_dim > 1024 ||
      vocab_size > kMaxVocab || num_hidden_layers > 4096 || num_attention_heads > 4096) {
    return Status::error(source + ": model dimensions are implausibly large");
  }
  if (head_dim % 2 != 0) return Status::error(source + ": head_dim must be even for RoPE");
  if (num_attention_heads % num_key_value_heads != 0) {
    return Status::error(source + ": num_attention_heads (" + std::to_string(num_attention_heads) +
                         ") is not a multiple of num_key_value_heads (" +
                         std::to_string(num_key_value_heads) + ")");
  }
  if (!(rms_norm_eps > 0) || !(rope_theta > 0)) {
    return Status::error(source + ": rms_norm_eps and rope_theta must be positive");
  }
  if (rope_scaling.type != RopeScaling::Type::kNone && !(rope_scaling.factor > 0)) {
    return Status::error(source + ": rope scaling factor must be positive");
  }
  if (rope_scaling.type == RopeScaling::Type::kLlama3 &&
      (!(rope_scaling.high_freq_factor > rope_scaling.low_freq_factor) ||
       rope_scaling.original_max_position_embeddings <= 0)) {
    return Status::error(source + ": invalid llama3 rope scaling parameters");
  }
  return Status();
}

Result<ModelConfig> model_config_from_hf_json(const json& j, const std::string& source) {
  if (!j.is_object()) return Status::error(source + ": expected a JSON object");
  ModelConfig c;
  std::optional<std::string> arch;
  if (auto it = j.find("architectures"); it != j.end() && it->is_array()) {
    for (const auto& a : *it) {
      if (a.is_string() && (arch = canonical_architecture(a.get<std::string>()))) break;
    }
  }
  if (!arch) {
    if (auto it = j.find("model_type"); it != j.end() && it->is_string()) {
      arch = canonical_architecture(it->get<std::string>());
    }
  }
  if (!arch) {
    std::string got = j.contains("architectures") ? j["architectures"].dump() : "none";
    return Status::error(source + ": unsupported architecture " + got +
                         " (supported: Llama, Mistral, Qwen2, Qwen3, Phi-3)");
  }
  c.architecture = *arch;
  TESSERA_RETURN_IF_ERROR(read_int(j, "vocab_size", &c.vocab_size, source, true));
  TESSERA_RETURN_IF_ERROR(read_int(j, "hidden_size", &c.hidden_size, source, true));
  TESSERA_RETURN_IF_ERROR(read_int(j, "intermediate_size", &c.intermediate_size, source, true));
  TESSERA_RETURN_IF_ERROR(read_int(j, "num_hidden_layers", &c.num_hidden_layers, source, true));
  TESSERA_RETURN_IF_ERROR(read_int(j, "num_attention_heads", &c.num_attention_heads, source, true));
  c.num_key_value_heads = c.num_attention_heads;
  TESSERA_RETURN_IF_ERROR(read_int(j, "num_key_value_heads", &c.num_key_value_heads, source, false));
  if (c.num_attention_heads > 0) c.head_dim = c.hidden_size / c.num_attention_heads;
  TESSERA_RETURN_IF_ERROR(read_int(j, "head_dim", &c.head_dim, source, false));
  c.max_position_embeddings = 2048;
  TESSERA_RETURN_IF_ERROR(
      read_int(j, "max_position_embeddings", &c.max_position_embeddings, source, false));
  TESSERA_RETURN_IF_ERROR(read_double(j, "rms_norm_eps", &c.rms_norm_eps, source));
  TESSERA_RETURN_IF_ERROR(read_rope(j, &c, source));
  double rotary_fraction = 1.0;
  TESSERA_RETURN_IF_ERROR(read_double(j, "partial_rotary_factor", &rotary_fraction, source));
  if (rotary_fraction != 1.0) {
    return Status::error(source + ": partial_rotary_factor " + std::to_string(rotary_fraction) +
                         " is not supported (RoPE over the whole head only)");
  }
  TESSERA_RETURN_IF_ERROR(read_bool(j, "tie_word_embeddings", &c.tie_word_embeddings, source));
  c.attention_bias = c.architecture == "qwen2";
  TESSERA_RETURN_IF_ERROR(read_bool(j, "attention_bias", &c.attention_bias, source));
  c.qk_norm = c.architecture == "qwen3";
  if (auto it = j.find("hidden_act"); it != j.end() && it->is_string() &&
                                      it->get<std::string>() != "silu") {
    return Status::error(source + ": unsupported hidden_act '" + it->get<std::string>() + "'");
  }
  int64_t window = 0;
  TESSERA_RETURN_IF_ERROR(read_int(j, "sliding_window", &window, source, false));
  // Mistral and Phi-3 apply a configured window; Qwen2/3 only with use_sliding_window.
  bool use_window = c.architecture == "mistral" || c.architecture == "phi3";
  TESSERA_RETURN_IF_ERROR(read_bool(j, "use_sliding_window", &use_window, source));
  if (window > 0 && use_window) c.sliding_window = window;
  int64_t bos = -1;
  TESSERA_RETURN_IF_ERROR(read_int(j, "bos_token_id", &bos, source, false));
  if (bos >= 0) c.bos_token_id = bos;
  TESSERA_RETURN_IF_ERROR(read_token_ids(j, "eos_token_id", &c.eos_token_ids, source));
  c.rope_layout = RopeLayout::kHalf;
  TESSERA_RETURN_IF_ERROR(c.validate(source));
  return c;
}

Result<ModelConfig> load_hf_config(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::is_directory(path, ec) ? fs::path(path) : fs::path(path).parent_path();
  const std::string config_path =
      fs::is_directory(path, ec) ? (fs::path(path) / "config.json").string() : path;
  auto j = read_json_file(config_path);
  if (!j.ok()) return j.status();
  auto config = model_config_from_hf_json(*j, config_path);
  if (!config.ok()) return config;
  // generation_config.json's eos_token_id (often a list) is what generation stops on.
  const std::string gen_path = (dir / "generation_config.json").string();
  if (fs::exists(gen_path, ec)) {
    auto g = read_json_file(gen_path);
    if (!g.ok()) return g.status();
    std::vector<int64_t> eos;
    TESSERA_RETURN_IF_ERROR(read_token_ids(*g, "eos_token_id", &eos, gen_path));
    if (!eos.empty()) config->eos_token_ids = eos;
  }
  return config;
}

Result<ModelConfig> model_config_from_gguf(const GgufFile& gguf) {
  const std::string source = gguf.source();
  auto arch_name = gguf.get_string("general.architecture");
  if (!arch_name) return Status::error(source + ": missing general.architecture");
  auto arch = canonical_architecture(std::string(*arch_name));
  if (!arch) {
    return Status::error(source + ": unsupported architecture '" + std::string(*arch_name) +
                         "' (supported: llama, qwen2, qwen3)");
  }
  ModelConfig c;
  c.architecture = *arch;
  const std::string p = std::string(*arch_name) + ".";
  auto need_int = [&](const std::string& key, int64_t* out) -> Status {
    auto v = gguf.get_int(key);
    if (!v) return Status::error(source + ": missing or non-integer metadata '" + key + "'");
    *out = *v;
    return Status();
  };
  TESSERA_RETURN_IF_ERROR(need_int(p + "embedding_length", &c.hidden_size));
  TESSERA_RETURN_IF_ERROR(need_int(p + "feed_forward_length", &c.intermediate_size));
  TESSERA_RETURN_IF_ERROR(need_int(p + "block_count", &c.num_hidden_layers));
  TESSERA_RETURN_IF_ERROR(need_int(p + "attention.head_count", &c.num_attention_heads));
  c.num_key_value_heads = gguf.get_int(p + "attention.head_count_kv").value_or(c.num_attention_heads);
  c.head_dim = c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0;
  c.head_dim = gguf.get_int(p + "attention.key_length").value_or(c.head_dim);
  c.max_position_embeddings = gguf.get_int(p + "context_length").value_or(2048);
  c.rms_norm_eps = gguf.get_float(p + "attention.layer_norm_rms_epsilon").value_or(1e-5);
  c.rope_theta = gguf.get_float(p + "rope.freq_base").value_or(10000.0);
  if (auto type = gguf.get_string(p + "rope.scaling.type"); type && *type == "linear") {
    c.rope_scaling.type = RopeScaling::Type::kLinear;
    c.rope_scaling.factor = gguf.get_float(p + "rope.scaling.factor").value_or(1.0);
  }
  // Llama 3 frequency scaling travels as the tensor rope_freqs.weight (read by the model).
  if (auto v = gguf.get_int(p + "vocab_size")) {
    c.vocab_size = *v;
  } else if (auto tokens = gguf.get_string_array("tokenizer.ggml.tokens")) {
    c.vocab_size = static_cast<int64_t>(tokens->size());
  } else if (const TensorView* emb = gguf.find("token_embd.weight")) {
    c.vocab_size = emb->shape.empty() ? 0 : emb->shape[0];
  }
  c.tie_word_embeddings = gguf.find("output.weight") == nullptr;
  c.attention_bias = gguf.find("blk.0.attn_q.bias") != nullptr;
  c.qk_norm = gguf.find("blk.0.attn_q_norm.weight") != nullptr;
  // llama.cpp's converter permutes llama q/k rows into interleaved order; qwen keeps NeoX.
  c.rope_layout = c.architecture == "llama" || c.architecture == "mistral"
                      ? RopeLayout::kInterleaved
                      : RopeLayout::kHalf;
  if (auto w = gguf.get_int(p + "attention.sliding_window"); w && *w > 0) c.sliding_window = *w;
  if (auto v = gguf.get_int("tokenizer.ggml.bos_token_id")) c.bos_token_id = *v;
  if (auto v = gguf.get_int("tokenizer.ggml.eos_token_id")) c.eos_token_ids.push_back(*v);
  if (auto v = gguf.get_int("tokenizer.ggml.eot_token_id")) {
    if (c.eos_token_ids.empty() || c.eos_token_ids[0] != *v) c.eos_token_ids.push_back(*v);
  }
  TESSERA_RETURN_IF_ERROR(c.validate(source));
  return c;
}

}  // namespace tessera
