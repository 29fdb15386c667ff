#include "server/metrics_text.h"

#include <fmt/format.h>

namespace tf::server {

namespace {

class MetricsWriter {
 public:
  explicit MetricsWriter(const std::string& model_name) : labels_(label_set(model_name)) {}

  void gauge(const std::string& name, const char* help, double value) { scalar(name, "gauge", help, value); }
  void counter(const std::string& name, const char* help, double value) { scalar(name, "counter", help, value); }
  void histogram(const std::string& name, const char* help, const LatencyHistogram& h) {
    head(name, "histogram", help);
    std::int64_t cumulative = 0;
    for (std::size_t i = 0; i < h.bounds.size(); ++i) {
      cumulative += h.counts[i];
      out_ += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels_, number(h.bounds[i]), cumulative);
    }
    out_ += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels_, h.count);
    out_ += fmt::format("{}_sum{{{}}} {}\n", name, labels_, number(h.sum));
    out_ += fmt::format("{}_count{{{}}} {}\n", name, labels_, h.count);
  }
  std::string take() { return std::move(out_); }

 private:
  // A label value escapes backslash, double quote and newline.
  static std::string label_set(const std::string& model) {
    std::string v;
    for (char c : model) {
      if (c == '\\') v += "\\\\";
      else if (c == '"') v += "\\\"";
      else if (c == '\n') v += "\\n";
      else v += c;
    }
    return "model_name=\"" + v + "\"";
  }
  static std::string number(double v) { return fmt::format("{}", v); }
  void head(const std::string& name, const char* type, const char* help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void scalar(const std::string& name, const char* type, const char* help, double value) {
    head(name, type, help);
    out_ += fmt::format("{}{{{}}} {}\n", name, labels_, number(value));
  }

  std::string labels_;
  std::string out_;
};

}  // namespace

std::string prometheus_metrics(const EngineStats& s, const std::string& model_name) {
  MetricsWriter w(model_name);
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  w.gauge("tensorfold:requests_running", "Requests admitted and not finished (prefilling or decoding).",
          d(s.requests_running));
  w.gauge("tensorfold:requests_waiting", "Requests waiting in the admission queue.", d(s.requests_waiting));
  w.gauge("tensorfold:memory_reserved_bytes", "Memory running requests have reserved (weights excluded).",
          static_cast<double>(s.memory_reserved_bytes));
  w.counter("tensorfold:requests_total", "Requests finished (completed, stopped, cancelled or failed).",
            d(s.requests_total));
  w.counter("tensorfold:requests_refused_total", "Requests refused at admission (never fit, or queue full).",
            d(s.requests_refused));
  w.counter("tensorfold:requests_cancelled_total", "Requests cancelled (the client left, or shutdown).",
            d(s.requests_cancelled));
  w.counter("tensorfold:prompt_tokens_total", "Prompt tokens of finished requests.", d(s.prompt_tokens_total));
  w.counter("tensorfold:generation_tokens_total", "Generated tokens of finished requests.",
            d(s.completion_tokens_total));
  w.counter("tensorfold:drafted_tokens_total", "Draft tokens proposed.", d(s.drafted_total));
  w.counter("tensorfold:accepted_tokens_total", "Draft tokens accepted.", d(s.accepted_total));
  w.counter("tensorfold:decode_rounds_total", "Decode rounds, counted per stream (one token and its verify window).", d(s.rounds_total));
  w.histogram("tensorfold:time_to_first_token_seconds", "Seconds from submission to the first generated token.",
              s.time_to_first_token);
  w.histogram("tensorfold:e2e_request_latency_seconds", "Seconds from submission to the end of a request.",
              s.e2e_latency);
  if (s.prompt_cache) {
    w.counter("tensorfold:prefix_cache_queries_total", "Prompt cache lookups (one per request).",
              d(s.prefix_cache_queries));
    w.counter("tensorfold:prefix_cache_hits_total", "Prompt cache lookups that restored a prefix.",
              d(s.prefix_cache_hits));
    w.gauge("tensorfold:prefix_cache_bytes", "Memory held by retained prompt prefixes.",
            static_cast<double>(s.prefix_cache_bytes));
    w.gauge("tensorfold:prefix_cache_budget_bytes", "The retained prefixes' memory budget (--prompt-cache-gib).",
            static_cast<double>(s.prefix_cache_budget_bytes));
    w.gauge("tensorfold:prefix_cache_entries", "Retained prompt prefixes in memory.", d(s.prefix_cache_entries));
    w.gauge("tensorfold:snapshot_files", "Prompt-prefix snapshot files on disk.", d(s.snapshot_files));
    w.gauge("tensorfold:snapshot_bytes", "Bytes of prompt-prefix snapshot files on disk.",
            static_cast<double>(s.snapshot_bytes));
    w.counter("tensorfold:snapshots_loaded_total", "Snapshots read back from disk.", d(s.snapshots_loaded));
    w.counter("tensorfold:snapshots_refused_total",
              "Snapshot files refused and removed (another model or build, truncated, or a bad checksum).",
              d(s.snapshots_refused));
  }
  // vLLM's names for the same figures.
  w.gauge("vllm:num_requests_running", "Number of requests in model execution batches.", d(s.requests_running));
  w.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", d(s.requests_waiting));
  w.counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", d(s.prompt_tokens_total));
  w.counter("vllm:generation_tokens_total", "Number of generation tokens processed.", d(s.completion_tokens_total));
  if (s.prompt_cache) {
    // vLLM counts tokens: prompt tokens looked up, and those found cached.
    w.counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
              d(s.prefix_cache_query_tokens));
    w.counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
              d(s.prefix_cache_hit_tokens));
  }
  w.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
              s.time_to_first_token);
  w.histogram("vllm:e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.",
              s.e2e_latency);
  return w.take();
}

}  // namespace tf::server
