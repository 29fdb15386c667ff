// Prefill and decode speed of a model on a backend, the engine's own forward passes with no HTTP:
//   tf_model_speed_bench MODEL [PROMPT_TOKENS=512] [DECODE_TOKENS=128] [REPEATS=3]
// Prefill runs the prompt in the family's chunk grid; decode generates greedily one token per forward.
// Prints the median of REPEATS runs. Results go to docs/benchmarks.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/mlx/mlx_backend.h"
#include "engine/sampler.h"
#include "families/model.h"

namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: tf_model_speed_bench MODEL [PROMPT_TOKENS] [DECODE_TOKENS] [REPEATS]\n");
    return 2;
  }
  const int prompt_n = argc > 2 ? std::stoi(argv[2]) : 512;
  const int decode_n = argc > 3 ? std::stoi(argv[3]) : 128;
  const int repeats = argc > 4 ? std::stoi(argv[4]) : 3;
  auto backend = tf::make_mlx_backend();
  auto model = tf::load_model(argv[1], *backend);
  const auto chunk = model->info().prefill_chunk;
  std::vector<std::int32_t> prompt(static_cast<std::size_t>(prompt_n));
  for (int i = 0; i < prompt_n; ++i) prompt[static_cast<std::size_t>(i)] = 100 + (i * 7919) % 20000;
  tf::SamplingParams greedy;
  greedy.temperature = 0.0f;
  std::vector<double> prefill, decode;
  for (int r = 0; r < repeats + 1; ++r) {  // the first run warms up and is not counted
    auto state = model->new_state();
    auto t0 = std::chrono::steady_clock::now();
    std::vector<float> logits;
    for (std::int64_t at = 0; at < prompt_n; at += chunk) {
      const auto n = std::min<std::int64_t>(chunk, prompt_n - at);
      logits = model->forward(*state, std::span<const std::int32_t>(prompt).subspan(static_cast<std::size_t>(at),
                                                                                   static_cast<std::size_t>(n)), 1);
    }
    const double p = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < decode_n; ++i) {
      const std::int32_t one[1] = {tf::sample_token(logits, greedy, 0, state->length())};
      logits = model->forward(*state, one, 1);
    }
    const double d = seconds_since(t0);
    if (r > 0) {
      prefill.push_back(prompt_n / p);
      decode.push_back(decode_n / d);
    }
  }
  std::printf("model %s backend %s weights %.1f MiB\n", argv[1], backend->name().c_str(),
              static_cast<double>(model->info().weight_bytes) / (1 << 20));
  std::printf("prefill %d tokens: %.1f tokens/s (median of %d)\n", prompt_n, median(prefill), repeats);
  std::printf("decode %d tokens: %.1f tokens/s (median of %d)\n", decode_n, median(decode), repeats);
  return 0;
}
