#include "cli/vllm_serve_flags.h"

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::cli {
namespace {

struct Flag {
  const char* name;
  bool takes_value;
  const char* why;  // accepted: what it would mean; refused: what is missing
};

// Accepted and without effect here.
constexpr Flag kWithoutEffect[] = {
    {"--trust-remote-code", false, "Tessera runs no model code from checkpoints"},
    {"--disable-log-requests", false, "Tessera does not log requests' prompts and parameters"},
    {"--disable-log-stats", false, "Tessera prints no periodic stats"},
    {"--disable-fastapi-docs", false, "Tessera serves no API docs pages"},
};

// Refused at start with what is missing.
constexpr Flag kNotBuilt[] = {
    {"--enable-lora", false, "LoRA adapters"},
    {"--lora-modules", true, "LoRA adapters"},
    {"--max-loras", true, "LoRA adapters"},
    {"--max-lora-rank", true, "LoRA adapters"},
    {"--speculative-config", true, "speculative decoding"},
    {"--data-parallel-size", true, "data parallelism"},
    {"--enable-expert-parallel", false, "expert parallelism"},
    {"--limit-mm-per-prompt", true, "multimodal inputs"},
    {"--ssl-keyfile", true, "TLS (put a TLS-terminating proxy in front)"},
    {"--ssl-certfile", true, "TLS (put a TLS-terminating proxy in front)"},
    {"--api-server-count", true, "several API server processes"},
};

[[noreturn]] void refuse(const Flag& f) {
  throw CLI::ValidationError(f.name, std::string("is vLLM's flag for ") + f.why + ", which Tessera does not support yet");
}

}  // namespace

void add_vllm_serve_flags(CLI::App* cmd, UvicornFlags* uvicorn) {
  const char* group = "vLLM compatibility";
  cmd->add_option("--uds", uvicorn->uds,
                  "vLLM's: listen on a Unix socket at this path instead of --host/--port (a stale socket "
                  "file there is replaced; the file is removed at shutdown)")
      ->group(group);
  cmd->add_flag("--disable-uvicorn-access-log", uvicorn->disable_access_log,
                "vLLM's: no access log (by default each answered request gets a line on stderr in "
                "uvicorn's format: INFO:     HOST:PORT - \"METHOD PATH HTTP/1.1\" STATUS PHRASE)")
      ->group(group);
  cmd->add_option("--disable-access-log-for-endpoints", uvicorn->excluded_endpoints,
                  "vLLM's: comma-separated paths whose requests get no access-log line, e.g. \"/health,/metrics\"")
      ->group(group);
  cmd->add_option("--uvicorn-log-level", uvicorn->log_level,
                  "vLLM's: uvicorn's log level; warning, error and critical turn the access log off (default: info)")
      ->check(CLI::IsMember({"critical", "debug", "error", "info", "trace", "warning"}))
      ->group(group);
  // Structured outputs run on xgrammar (src/structured/): its name and "auto" are accepted,
  // another backend is refused by name.
  auto backend = [](const char* flag, const std::string& name) {
    if (name != "auto" && name != "xgrammar") {
      throw CLI::ValidationError(flag, "backend " + name + ": Tessera's structured outputs run on xgrammar only");
    }
  };
  cmd->add_option_function<std::string>(
         "--guided-decoding-backend", [backend](const std::string& v) { backend("--guided-decoding-backend", v); },
         "vLLM's older name of the structured-outputs backend: auto or xgrammar")
      ->group(group);
  cmd->add_option_function<std::string>(
         "--structured-outputs-config",
         [backend](const std::string& v) {
           const auto j = nlohmann::json::parse(v, nullptr, false);
           if (!j.is_object()) throw CLI::ValidationError("--structured-outputs-config", "not a JSON object: " + v);
           for (const auto& [key, value] : j.items()) {
             if (key == "backend" && value.is_string()) {
               backend("--structured-outputs-config", value.get<std::string>());
             } else {
               throw CLI::ValidationError("--structured-outputs-config", key + " is not supported yet (only backend)");
             }
           }
         },
         "vLLM's structured-outputs settings, as JSON: {\"backend\": \"xgrammar\"} (or auto)")
      ->group(group);
  for (const Flag& f : kWithoutEffect) {
    const std::string help = std::string("vLLM's; no effect here: ") + f.why;
    if (f.takes_value) {
      cmd->add_option_function<std::string>(f.name, [](const std::string&) {}, help)->group(group);
    } else {
      cmd->add_flag_callback(f.name, [] {}, help)->group(group);
    }
  }
  for (const Flag& f : kNotBuilt) {
    const std::string help = std::string("vLLM's; refused: ") + f.why + " not supported yet";
    if (f.takes_value) {
      cmd->add_option_function<std::string>(f.name, [f](const std::string&) { refuse(f); }, help)->group(group);
    } else {
      cmd->add_flag_callback(f.name, [f] { refuse(f); }, help)->group(group);
    }
  }
}

void add_vllm_engine_flags(CLI::App* cmd, EngineArgs* args) {
  const char* group = "vLLM compatibility";
  cmd->add_option("--seed", args->seed, "vLLM's engine seed: the sampling seed of requests that give none")->group(group);
  // A value Tessera runs, or a refusal naming the flag and what is not built.
  auto only = [&](const char* name, std::vector<std::string> runs, std::string missing, std::string help) {
    cmd->add_option_function<std::string>(
           name,
           [name, runs, missing](const std::string& value) {
             if (std::find(runs.begin(), runs.end(), value) == runs.end()) {
               throw CLI::ValidationError(name, value + ": " + missing + " is not supported yet");
             }
           },
           "vLLM's; " + help)
        ->group(group);
  };
  only("--tensor-parallel-size", {"1"}, "tensor parallelism", "1 (one GPU)");
  only("--pipeline-parallel-size", {"1"}, "pipeline parallelism", "1 (one GPU)");
  only("--quantization", {"none", "None"}, "quantizing the weights at load (--quantization)",
       "none: quantized checkpoints (GGUF) are read as they are");
  cmd->add_option_function<std::string>(
         "--swap-space", [](const std::string&) {},
         "vLLM's; no effect here, as in vLLM's V1 engine (--kv-offloading-size keeps evicted KV blocks in host memory)")
      ->group(group);
}

}  // namespace tessera::cli
