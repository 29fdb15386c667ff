// Test helper: greedy continuations of prompt ids through a model on a backend, for comparison with the
// transformers golden (tests/conformance/test_llama_golden.py for MLX, scripts/device/compare_golden.py for
// CUDA). Reads {"cases": [{"prompt_ids": [...]}]} and a step count; writes {"cases": [{"greedy": [...],
// "top2_gap": [...]}]} to stdout; EOS does not stop. Prints decode speed (forward passes only) to stderr.
// Where the backend finds greedy tokens itself, each case is decoded a second time by the engine's decoder
// (decode_stream without drafts: greedy ids, each round queued ahead, ForwardPart::ahead); a case whose tokens
// differ from the logits path's fails the tool. With "logit_rows": N in the input, each case also gets the
// prompt's last N logits rows ("prompt_logits"), from one forward pass over the prompt (prefill arithmetic); with
// "decode_rows": N - 1 as well, the prompt's last N - 1 tokens are fed one at a time instead, as the server
// decodes a reply (so rows 2 .. N are decode rows), and "message_start": ID prefills before them in the chunks
// the server's chunk plan cuts (engine/chunk_plan.h: at each ID, the token that opens a message); with
// "check_rollback": true, verify windows with wrong drafts must give serial decoding's rows before and after each
// rollback (printed counts; a difference fails the tool).
//   tf_greedy_tool MODEL GOLDEN.json STEPS         (MLX; built as tf_cuda_greedy_tool for CUDA)
#include <cstdlib>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <span>
#include <stdexcept>

#include "backends/compiled_backends.h"
#include "engine/chunk_plan.h"
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

namespace {

struct RollbackCounts {
  long windows = 0, accepted = 0, rejected = 0;
};

bool same_bits(const std::vector<float>& a, const float* b) { return std::memcmp(a.data(), b, a.size() * 4) == 0; }

// Verify windows over the greedy continuation `tokens`, some drafts deliberately wrong, as the engine runs
// them: every row before the first wrong draft must equal serial decoding bit for bit, and after the state is
// truncated to the accepted length (a rollback inside recurrent layers' windows too) decoding goes on exactly
// as serial decoding. Returns the rows that differ.
int check_windows(tf::Model& model, std::span<const std::int32_t> prompt, const std::vector<std::int32_t>& tokens,
                  const std::vector<std::vector<float>>& serial, RollbackCounts& counts) {
  const auto vocab = static_cast<std::int32_t>(model.info().vocab);
  auto state = model.new_state();
  model.forward(*state, prompt, 1);
  int failures = 0;
  std::size_t i = 0;  // tokens[i] is the next token to run
  while (i + 1 < tokens.size()) {
    const std::size_t drafts = std::min<std::size_t>(1 + i % 5, tokens.size() - i - 1);
    const std::size_t wrong = (i * 7) % (drafts + 2);  // a draft index to corrupt; >= drafts: none
    std::vector<std::int32_t> window(tokens.begin() + static_cast<std::ptrdiff_t>(i),
                                     tokens.begin() + static_cast<std::ptrdiff_t>(i + 1 + drafts));
    if (wrong < drafts) window[1 + wrong] = (window[1 + wrong] + 1) % vocab;
    const std::int64_t start = state->length();
    const auto rows = model.forward(*state, window, static_cast<std::int64_t>(window.size()));
    std::size_t accepted = 0;
    while (accepted < drafts && window[1 + accepted] == tokens[i + 1 + accepted]) ++accepted;
    for (std::size_t j = 0; j <= accepted; ++j)
      if (!same_bits(serial[i + 1 + j], rows.data() + j * static_cast<std::size_t>(vocab))) ++failures;
    state->truncate(start + 1 + static_cast<std::int64_t>(accepted));
    ++counts.windows;
    counts.accepted += static_cast<long>(accepted);
    counts.rejected += accepted < drafts ? 1 : 0;
    i += 1 + accepted;
  }
  if (i < tokens.size()) {  // the last token, after the last rollback
    const std::int32_t one[1] = {tokens[i]};
    if (!same_bits(serial[i + 1], model.forward(*state, one, 1).data())) ++failures;
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL GOLDEN.json STEPS\n", argv[0]);
    return 2;
  }
  try {
    // TF_TP=N: N tensor-parallel ranks (tests of the split; on CUDA TF_TP_ONE_DEVICE=1 puts them on one device).
    const char* tp_env = std::getenv("TF_TP");
    const int tp = tp_env != nullptr ? std::atoi(tp_env) : 1;
    std::unique_ptr<tf::Backend> backend;
    if (tp > 1) backend = tf::make_backend("auto", tp);
    else backend = TF_MAKE_BACKEND();
    // TF_PROMPT_PRECISION=bf16|full: prompt rows' precision where the backend has a choice (CUDA; unset: its
    // default, bf16). The golden checks run in each mode.
    if (const char* pp = std::getenv("TF_PROMPT_PRECISION"); pp != nullptr && *pp != '\0') {
      const auto p = tf::parse_prompt_precision(pp);
      if (!p) throw std::runtime_error(std::string("TF_PROMPT_PRECISION: bf16 or full, not ") + pp);
      if (backend->has_prompt_precision()) backend->set_prompt_precision(*p);
    }
    auto model = tf::load_model(argv[1], *backend);
    std::ifstream in(argv[2]);
    const auto golden = nlohmann::json::parse(in);
    const int steps = std::stoi(argv[3]);
    const auto vocab = static_cast<std::size_t>(model->info().vocab);
    const std::int64_t logit_rows = golden.value("logit_rows", 1);
    const std::int64_t decode_rows = golden.value("decode_rows", 0);
    if (decode_rows > 0 && decode_rows + 1 != logit_rows)
      throw std::runtime_error("decode_rows must be logit_rows - 1");
    tf::ChunkPlanRule plan_rule;  // the server's, given the token that opens a message
    plan_rule.chunk = model->info().prefill_chunk;
    plan_rule.message_start = golden.value("message_start", -1);
    const bool check_rollback = golden.value("check_rollback", false);
    RollbackCounts rollback;
    int rollback_failures = 0;
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
      if (static_cast<std::int64_t>(prompt.size()) <= decode_rows) throw std::runtime_error("decode_rows too large");
      const std::span<const std::int32_t> ids(prompt);
      const std::size_t prefill = ids.size() - static_cast<std::size_t>(decode_rows);
      std::size_t start = 0;
      if (plan_rule.message_start >= 0) {  // every chunk of the plan but the last
        const auto plan = tf::plan_chunks(ids.first(prefill), plan_rule);
        for (std::size_t k = 0; k + 1 < plan.ends.size(); ++k) {
          const auto end = static_cast<std::size_t>(plan.ends[k]);
          model->forward(*state, ids.subspan(start, end - start), 1);
          start = end;
        }
      }
      auto prompt_logits =
          model->forward(*state, ids.subspan(start, prefill - start), decode_rows > 0 ? 1 : logit_rows);
      for (std::size_t i = ids.size() - static_cast<std::size_t>(decode_rows); i < ids.size(); ++i) {
        const auto row = model->forward(*state, ids.subspan(i, 1), 1);
        prompt_logits.insert(prompt_logits.end(), row.begin(), row.end());
      }
      auto logits = std::vector<float>(prompt_logits.end() - static_cast<std::ptrdiff_t>(vocab), prompt_logits.end());
      std::vector<std::int32_t> tokens;
      std::vector<double> gaps;
      std::vector<std::vector<float>> serial{logits};  // serial[k]: the distribution after k emitted tokens
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
        if (check_rollback) serial.push_back(logits);
      }
      out["cases"].push_back({{"greedy", tokens}, {"top2_gap", gaps}});
      if (logit_rows > 1) out["cases"].back()["prompt_logits"] = prompt_logits;
      if (check_rollback) rollback_failures += check_windows(*model, prompt, tokens, serial, rollback);
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
      std::fprintf(stderr,
                   "%s: the engine's greedy rounds (queued ahead): %d cases, %d differ from the logits path, "
                   "%.1f rounds/s\n",
                   argv[0], round_cases, round_mismatches, static_cast<double>(rounds_done) / rounds_s);
    if (check_rollback)
      std::fprintf(stderr,
                   "%s: rollback: %ld verify windows, %ld drafts accepted, %ld rejected mid-window, %d rows "
                   "differ from serial decoding\n",
                   argv[0], rollback.windows, rollback.accepted, rollback.rejected, rollback_failures);
    return round_mismatches == 0 && rollback_failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}
