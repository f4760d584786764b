#include "cli/vllm_serve_flags.h"

#include <string>

namespace tessera::cli {
namespace {

struct Flag {
  const char* name;
  bool takes_value;
  const char* why;  // accepted: what it would mean; refused: what is missing
};

// Accepted and without effect here.
constexpr Flag kWithoutEffect[] = {
    {"--revision", true, "a model revision on the hub: Tessera loads local files"},
    {"--tokenizer-revision", true, "a tokenizer revision on the hub: Tessera loads local files"},
    {"--download-dir", true, "where hub downloads go: Tessera loads local files"},
    {"--trust-remote-code", false, "Tessera runs no model code from checkpoints"},
    {"--disable-log-requests", false, "Tessera logs no requests"},
    {"--disable-log-stats", false, "Tessera prints no periodic stats"},
    {"--disable-fastapi-docs", false, "Tessera serves no API docs pages"},
    {"--disable-uvicorn-access-log", false, "Tessera writes no access log"},
    {"--uvicorn-log-level", true, "Tessera writes no access log"},
};

// Refused at start with what is missing.
constexpr Flag kNotBuilt[] = {
    {"--enable-lora", false, "LoRA adapters"},
    {"--lora-modules", true, "LoRA adapters"},
    {"--max-loras", true, "LoRA adapters"},
    {"--max-lora-rank", true, "LoRA adapters"},
    {"--speculative-config", true, "speculative decoding"},
    {"--enable-auto-tool-choice", false, "tool-call parsing"},
    {"--tool-call-parser", true, "tool-call parsing"},
    {"--reasoning-parser", true, "reasoning parsing"},
    {"--structured-outputs-config", true, "structured outputs"},
    {"--guided-decoding-backend", true, "structured outputs"},
    {"--kv-cache-dtype", true, "an FP8 KV cache"},
    {"--pipeline-parallel-size", true, "pipeline parallelism"},
    {"--data-parallel-size", true, "data parallelism"},
    {"--enable-expert-parallel", false, "expert parallelism"},
    {"--limit-mm-per-prompt", true, "multimodal inputs"},
    {"--ssl-keyfile", true, "TLS (put a TLS-terminating proxy in front)"},
    {"--ssl-certfile", true, "TLS (put a TLS-terminating proxy in front)"},
    {"--uds", true, "a Unix-socket listener"},
    {"--api-server-count", true, "several API server processes"},
};

[[noreturn]] void refuse(const Flag& f) {
  throw CLI::ValidationError(f.name, std::string("is vLLM's flag for ") + f.why + ", which Tessera does not support yet");
}

}  // namespace

void add_vllm_serve_flags(CLI::App* cmd) {
  for (const Flag& f : kWithoutEffect) {
    const std::string help = std::string("vLLM's; no effect here: ") + f.why;
    if (f.takes_value) {
      cmd->add_option_function<std::string>(f.name, [](const std::string&) {}, help)->group("vLLM compatibility");
    } else {
      cmd->add_flag_callback(f.name, [] {}, help)->group("vLLM compatibility");
    }
  }
  for (const Flag& f : kNotBuilt) {
    const std::string help = std::string("vLLM's; refused: ") + f.why + " not supported yet";
    if (f.takes_value) {
      cmd->add_option_function<std::string>(f.name, [f](const std::string&) { refuse(f); }, help)
          ->group("vLLM compatibility");
    } else {
      cmd->add_flag_callback(f.name, [f] { refuse(f); }, help)->group("vLLM compatibility");
    }
  }
}

}  // namespace tessera::cli
