// Test helper: greedy continuations of prompt ids through a model on a backend, for comparison with the
// transformers golden (tests/conformance/test_llama_golden.py). Reads {"cases": [{"prompt_ids": [...]}]}
// and a step count; writes {"cases": [{"greedy": [...], "top2_gap": [...]}]} to stdout. EOS does not stop.
//   tf_greedy_tool MODEL GOLDEN.json STEPS
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backends/mlx/mlx_backend.h"
#include "engine/sampler.h"
#include "families/model.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: tf_greedy_tool MODEL GOLDEN.json STEPS\n");
    return 2;
  }
  try {
    auto backend = tf::make_mlx_backend();
    auto model = tf::load_model(argv[1], *backend);
    std::ifstream in(argv[2]);
    const auto golden = nlohmann::json::parse(in);
    const int steps = std::stoi(argv[3]);
    tf::SamplingParams greedy;
    greedy.temperature = 0.0f;
    nlohmann::json out = {{"cases", nlohmann::json::array()}};
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
        logits = model->forward(*state, one, 1);
      }
      out["cases"].push_back({{"greedy", tokens}, {"top2_gap", gaps}});
    }
    std::cout << out.dump() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tf_greedy_tool: %s\n", e.what());
    return 1;
  }
}
