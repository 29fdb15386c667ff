#pragma once
// A Prometheus-style histogram of seconds with fixed bucket bounds (the engine fills it; /metrics prints it).
#include <cstdint>
#include <vector>

namespace tf {

struct LatencyHistogram {
  std::vector<double> bounds;         // upper bounds, increasing; +Inf is implied
  std::vector<std::int64_t> counts;   // per bucket (not cumulative), bounds.size() + 1 entries
  double sum = 0.0;
  std::int64_t count = 0;

  explicit LatencyHistogram(std::vector<double> upper_bounds = {})
      : bounds(std::move(upper_bounds)), counts(bounds.size() + 1, 0) {}
  void observe(double seconds) {
    std::size_t i = 0;
    while (i < bounds.size() && seconds > bounds[i]) ++i;
    ++counts[i];
    sum += seconds;
    ++count;
  }
};

// vLLM's buckets, so that dashboards built for it read ours the same way.
inline std::vector<double> ttft_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
          80.0, 160.0, 640.0, 2560.0};
}
inline std::vector<double> e2e_latency_buckets() {
  return {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
          960.0, 1920.0, 7680.0};
}

}  // namespace tf
