// /metrics: the engine's metrics in Prometheus text format (version 0.0.4), under vLLM's
// names with a `tessera:` prefix.
#pragma once

#include <string>

#include "engine/engine_metrics.h"

namespace tessera::server {

std::string render_prometheus(const EngineMetrics& m, const std::string& model_name);

}  // namespace tessera::server
