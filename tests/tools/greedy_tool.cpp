// Test helper: greedy continuations of prompt ids through a model on a backend, for comparison with the
// transformers golden (tests/conformance/test_llama_golden.py for MLX, scripts/device/compare_golden.py for
// CUDA). Reads {"cases": [{"prompt_ids": [...]}]} and a step count; writes {"cases": [{"greedy": [...],
// "top2_gap": [...]}]} to stdout; EOS does not stop. Prints decode speed (forward passes only) to stderr.
// Where the backend finds greedy tokens itself, each case is decoded a second time by the engine's decoder
// (decode_stream without drafts: greedy ids, each round queued ahead, ForwardPart::ahead); a case whose tokens
// differ from the logits path's fails the tool.
//   tf_greedy_tool MODEL GOLDEN.json STEPS         (MLX; built as tf_cuda_greedy_tool for CUDA)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <span>

#include "engine/decode_loop.h"
#include "engine/sampler.h"
#include "families/model.h"
#ifdef TF_GREEDY_TOOL_CUDA
#include "backends/cuda/cuda_backend.h"
#define TF_MAKE_BACKEND tf::make_cuda_backend
#else
#include "backends/mlx/mlx_backend.h"
#define TF_MAKE_BACKEND tf::make_mlx_backend
#endif

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL GOLDEN.json STEPS\n", argv[0]);
    return 2;
  }
  try {
    auto backend = TF_MAKE_BACKEND();
    auto model = tf::load_model(argv[1], *backend);
    std::ifstream in(argv[2]);
    const auto golden = nlohmann::json::parse(in);
    const int steps = std::stoi(argv[3]);
    tf::SamplingParams greedy;
    greedy.temperature = 0.0f;
    nlohmann::json out = {{"cases", nlohmann::json::array()}};
    double decode_s = 0.0;
    long decoded = 0;
    int round_cases = 0, round_mismatches = 0;
    double rounds_s = 0.0;
    long rounds_done = 0;
    for (const auto& c : golden.at("cases")) {
      const auto prompt = c.at("prompt_ids").get<std::vector<std::int32_t>>();
      auto state = model->new_state();
      auto logits = model->forward(*state, prompt, 1);
      std::vector<std::int32_t> tokens;
      std::vector<double> gaps;
      for (int i = 0; i < steps; ++i) {
        const std::int32_t t = tf::sample_token(logits, greedy, 0, state->length());
        std::vector<float> sorted(logits);
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
        tokens.push_back(t);
        gaps.push_back(static_cast<double>(sorted[0] - sorted[1]));
        const std::int32_t one[1] = {t};
        const auto t0 = std::chrono::steady_clock::now();
        logits = model->forward(*state, one, 1);
        decode_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++decoded;
      }
      out["cases"].push_back({{"greedy", tokens}, {"top2_gap", gaps}});
      if (model->greedy_on_backend()) {  // the engine's rounds: decode_stream without drafts
        auto rounds = model->new_state();
        std::vector<std::int32_t> history = prompt, emitted;
        tf::DecodeSettings settings;
        settings.sampling = greedy;
        settings.budget = steps;
        tf::DecodeCounters counters;
        const auto first = model->forward(*rounds, prompt, 1);
        const auto t0 = std::chrono::steady_clock::now();
        tf::decode_stream(
            *model, *rounds, first, history, settings, nullptr,
            [&](std::int32_t t) {
              emitted.push_back(t);
              return true;
            },
            [] { return false; }, counters);
        rounds_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        rounds_done += static_cast<long>(counters.rounds);
        if (emitted != tokens) ++round_mismatches;
        ++round_cases;
      }
    }
    std::cout << out.dump() << "\n";
    std::fprintf(stderr, "%s: %ld decode steps, %.1f tokens/s (forward only)\n", argv[0], decoded,
                 static_cast<double>(decoded) / decode_s);
    if (round_cases > 0)
      std::fprintf(stderr, "%s: the engine's greedy rounds (queued ahead): %d cases, %d differ from the logits path, "
                   "%.1f rounds/s\n",
                   argv[0], round_cases, round_mismatches, static_cast<double>(rounds_done) / rounds_s);
    return round_mismatches == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}
