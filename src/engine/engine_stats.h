#pragma once
// The engine's counters since start, read by /health and /metrics.
#include <cstdint>
#include <string>

#include "engine/latency_histogram.h"

namespace tf {

struct EngineStats {
  std::int64_t requests_total = 0, prompt_tokens_total = 0, completion_tokens_total = 0;
  std::int64_t drafted_total = 0, accepted_total = 0, rounds_total = 0;
  std::string drafter = "none";  // what drafts serve: "none", "copies" (context copies) or "mtp" (the MTP head)
  std::string prompt_precision;  // "bf16" or "full" (backends/prompt_precision.h); "": the backend has no choice
  bool busy = false;
  std::int64_t requests_running = 0;  // admitted: prefilling or decoding
  std::int64_t requests_waiting = 0;  // in the admission queue
  std::int64_t requests_refused = 0;  // never fits or queue full
  std::int64_t requests_cancelled = 0;
  std::size_t memory_reserved_bytes = 0;  // what running streams hold (weights excluded)
  // Prompt caching (engine/prompt_cache.h): lookups, prompt tokens looked up and found, what is retained.
  bool prompt_cache = false;
  std::int64_t prefix_cache_queries = 0, prefix_cache_hits = 0;
  std::int64_t prefix_cache_query_tokens = 0, prefix_cache_hit_tokens = 0;
  std::int64_t prefix_cache_entries = 0, snapshot_files = 0, snapshots_loaded = 0, snapshots_refused = 0;
  std::size_t prefix_cache_bytes = 0, prefix_cache_budget_bytes = 0, snapshot_bytes = 0;
  LatencyHistogram time_to_first_token{ttft_buckets()};
  LatencyHistogram e2e_latency{e2e_latency_buckets()};
};

}  // namespace tf
