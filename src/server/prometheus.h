// /metrics: the engine's metrics in Prometheus text format (version 0.0.4): the families vLLM
// exports under vLLM's names and labels (`vllm:`), Tessera's own under `tessera:`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/engine_metrics.h"

namespace tessera::server {

// cache_config: vllm:cache_config_info's labels (name, value), none: the family is left out.
std::string render_prometheus(const EngineMetrics& m, const std::string& model_name,
                              const std::vector<std::pair<std::string, std::string>>& cache_config = {});

}  // namespace tessera::server
