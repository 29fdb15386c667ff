// Test helper: the MTP head's logits over a prompt, for comparison with the hand-built float64 reference
// (tests/goldens/qwen3_5/bf16-mtp/mtp_golden.json, tests/conformance/test_qwen3_5_mtp.py). Reads
// {"prompt_ids": [...]}; runs the model over the prompt with its hidden rows, takes the greedy next token g,
// and runs the head over rows t = 0 .. n-1 paired with tokens prompt[1..n-1] + [g], at positions t. Writes
// {"next_token": g, "logits": [[vocab] per t], "argmax": [per t], "incremental_max_diff": d} to stdout, where
// d is the largest difference between those logits and the same rows run through the head one at a time (as a
// stream's drafts build them: the head's KV cache growing row by row).
//   tf_mtp_tool MODEL IN.json        (MLX; built as tf_cuda_mtp_tool for CUDA)
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backends/compiled_backends.h"
#ifdef TF_MTP_TOOL_CUDA
#include "backends/cuda/cuda_backend.h"
#define TF_MAKE_BACKEND tf::make_cuda_backend
#else
#include "backends/mlx/mlx_backend.h"
#define TF_MAKE_BACKEND tf::make_mlx_backend
#endif
#include "engine/sampler.h"
#include "families/model.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODEL IN.json\n", argv[0]);
    return 2;
  }
  try {
    // TF_TP=N: N tensor-parallel ranks (tests of the split; on CUDA TF_TP_ONE_DEVICE=1 puts them on one device).
    const char* tp_env = std::getenv("TF_TP");
    const int tp = tp_env != nullptr ? std::atoi(tp_env) : 1;
    std::unique_ptr<tf::Backend> backend;
    if (tp > 1) backend = tf::make_backend("auto", tp);
    else backend = TF_MAKE_BACKEND();
    auto model = tf::load_model(argv[1], *backend);
    tf::DraftHead* head = model->draft_head();
    if (head == nullptr) throw std::runtime_error("the model has no MTP head");
    std::ifstream in(argv[2]);
    const auto prompt = nlohmann::json::parse(in).at("prompt_ids").get<std::vector<std::int32_t>>();
    const auto vocab = static_cast<std::size_t>(model->info().vocab);
    const auto width = static_cast<std::size_t>(model->info().hidden);
    const auto n = static_cast<std::int64_t>(prompt.size());

    auto state = model->new_state();
    std::vector<float> hidden;
    const auto last = model->forward_hidden(*state, prompt, 1, hidden);
    const std::int32_t next = tf::greedy_token(last);
    std::vector<std::int32_t> tokens(prompt.begin() + 1, prompt.end());
    tokens.push_back(next);

    auto all_state = head->new_state();
    const auto all = head->forward(*all_state, tokens, hidden, n);
    auto one_state = head->new_state();
    double incremental = 0.0;
    nlohmann::json logits = nlohmann::json::array(), argmax = nlohmann::json::array();
    for (std::int64_t t = 0; t < n; ++t) {
      const std::span<const float> row(all.logits.data() + static_cast<std::size_t>(t) * vocab, vocab);
      logits.push_back(std::vector<float>(row.begin(), row.end()));
      argmax.push_back(tf::greedy_token(row));
      const auto one =
          head->forward(*one_state, std::span<const std::int32_t>(tokens).subspan(static_cast<std::size_t>(t), 1),
                        std::span<const float>(hidden).subspan(static_cast<std::size_t>(t) * width, width), 1);
      for (std::size_t v = 0; v < vocab; ++v)
        incremental = std::max(incremental, static_cast<double>(std::fabs(one.logits[v] - row[v])));
    }
    const nlohmann::json out = {
        {"next_token", next}, {"logits", logits}, {"argmax", argmax}, {"incremental_max_diff", incremental}};
    std::cout << out.dump() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}
