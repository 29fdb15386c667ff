// Test helper: greedy continuations of prompt ids through a model on a backend, for comparison with the
// transformers golden (tests/conformance/test_llama_golden.py for MLX, scripts/device/compare_golden.py for
// CUDA). Reads {"cases": [{"prompt_ids": [...]}]} and a step count; writes {"cases": [{"greedy": [...],
// "top2_gap": [...]}]} to stdout; EOS does not stop. Prints decode speed (forward passes only) to stderr.
//   tf_greedy_tool MODEL GOLDEN.json STEPS         (MLX; built as tf_cuda_greedy_tool for CUDA)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>

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
    }
    std::cout << out.dump() << "\n";
    std::fprintf(stderr, "%s: %ld decode steps, %.1f tokens/s (forward only)\n", argv[0], decoded,
                 static_cast<double>(decoded) / decode_s);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}
