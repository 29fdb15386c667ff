#pragma once
// GET /metrics: the engine's counters in Prometheus' text format (version 0.0.4), under `tensorfold:` names
// and, for the figures dashboards already chart, vLLM's names (vllm:num_requests_running, ...).
#include <string>

#include "engine/engine_stats.h"

namespace tf::server {

std::string prometheus_metrics(const EngineStats& stats, const std::string& model_name);

}  // namespace tf::server
