// Prefill and decode speed of a model on a backend, the engine's own forward passes with no HTTP:
//   tf_model_speed_bench MODEL [PROMPT_TOKENS=512] [DECODE_TOKENS=128] [REPEATS=3] [MTP_DRAFTS=0] [DECODE_FROM]
//                        [SAMPLING=greedy]
// SAMPLING `sampled` chooses each decoded token by the engine's keyed sampler at temperature 0.7, top-p 0.9 (what
// a chat request asks for) instead of its argmax: the sampled row beside the greedy one.
// DECODE_FROM `empty` decodes in a new state after a 1-token prompt, as llama-bench's tg test does (its context
// starts empty), so the two decode figures read the same KV lengths; by default decode follows the prompt.
// With MTP_DRAFTS > 0 (a model with an MTP head), greedy decoding is also run through the engine's decode loop
// with that many drafts a round from the head (the same tokens as serial decoding: the loop verifies them), and
// its speed and acceptance are printed beside the loop's serial speed.
// Prefill runs the prompt in the family's chunk grid; decode generates greedily one token per forward.
// Then the cost of a rejected draft: an 8-row verify window cut back to 3 rows (the state's truncate: for a
// recurrent layer, the pre-window state and a replay of the kept rows), beside a 1-row decode step and a
// snapshot/restore of the whole state (the other way to undo a window). Prints the median of REPEATS runs.
// Results go to docs/benchmarks.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "backends/mlx/mlx_backend.h"
#include "engine/decode_loop.h"
#include "engine/drafting/mtp_drafter.h"
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

// Greedy decoding through decode_stream(), serial and with MTP drafts; the two must emit the same tokens.
void decode_with_mtp(tf::Model& model, const std::vector<std::int32_t>& prompt, int decode_n, int repeats, int drafts) {
  auto* head = model.draft_head();
  if (!head) {
    std::fprintf(stderr, "this model has no MTP head\n");
    std::exit(2);
  }
  const auto chunk = model.info().prefill_chunk;
  tf::DecodeSettings settings;
  settings.sampling.temperature = 0.0f;
  settings.budget = decode_n;
  std::vector<double> serial_rate, mtp_rate;
  std::vector<std::int32_t> serial_tokens;
  tf::DecodeCounters counters;
  for (int r = 0; r < repeats + 1; ++r) {
    for (const bool with_mtp : {false, true}) {
      auto state = model.new_state();
      tf::MtpDrafter drafter(*head, model.info().hidden, settings.sampling, 0);
      std::vector<float> logits;
      for (std::int64_t at = 0; at < static_cast<std::int64_t>(prompt.size()); at += chunk) {
        const auto n = std::min<std::int64_t>(chunk, static_cast<std::int64_t>(prompt.size()) - at);
        const auto part =
            std::span<const std::int32_t>(prompt).subspan(static_cast<std::size_t>(at), static_cast<std::size_t>(n));
        if (with_mtp) {
          std::vector<float> hidden;
          logits = model.forward_hidden(*state, part, 1, hidden);
          drafter.observe(prompt, at, hidden, n);
        } else {
          logits = model.forward(*state, part, 1);
        }
      }
      std::vector<std::int32_t> history = prompt;
      settings.max_drafts = with_mtp ? drafts : 0;
      tf::DecodeCounters c;
      const auto t0 = std::chrono::steady_clock::now();
      tf::decode_stream(
          model, *state, std::move(logits), history, settings, with_mtp ? &drafter : nullptr,
          [](std::int32_t) { return true; }, [] { return false; }, c);
      const double d = seconds_since(t0);
      const std::vector<std::int32_t> emitted(history.begin() + static_cast<std::ptrdiff_t>(prompt.size()),
                                              history.end());
      if (!with_mtp)
        serial_tokens = emitted;
      else if (emitted != serial_tokens) {
        std::fprintf(stderr, "MTP-drafted decoding emitted other tokens than serial decoding\n");
        std::exit(1);
      }
      if (r == 0) continue;
      (with_mtp ? mtp_rate : serial_rate).push_back(static_cast<double>(c.emitted) / d);
      if (with_mtp) {
        counters.drafted += c.drafted;
        counters.accepted += c.accepted;
      }
    }
  }
  std::printf(
      "decode loop, greedy: serial %.1f tokens/s; with %d MTP drafts a round %.1f tokens/s (%.2fx), "
      "%lld drafted, %lld accepted (%.1f%%), tokens identical\n",
      median(serial_rate), drafts, median(mtp_rate), median(mtp_rate) / median(serial_rate),
      static_cast<long long>(counters.drafted), static_cast<long long>(counters.accepted),
      counters.drafted ? 100.0 * static_cast<double>(counters.accepted) / static_cast<double>(counters.drafted) : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: tf_model_speed_bench MODEL [PROMPT_TOKENS] [DECODE_TOKENS] [REPEATS] [MTP_DRAFTS] "
                 "[DECODE_FROM: prompt|empty] [SAMPLING: greedy|sampled]\n");
    return 2;
  }
  const int prompt_n = argc > 2 ? std::stoi(argv[2]) : 512;
  const int decode_n = argc > 3 ? std::stoi(argv[3]) : 128;
  const int repeats = argc > 4 ? std::stoi(argv[4]) : 3;
  const int mtp_drafts = argc > 5 ? std::stoi(argv[5]) : 0;
  const std::string decode_from = argc > 6 ? argv[6] : "prompt";
  if (decode_from != "prompt" && decode_from != "empty") {
    std::fprintf(stderr, "DECODE_FROM: prompt or empty, not %s\n", decode_from.c_str());
    return 2;
  }
  const std::string sampling = argc > 7 ? argv[7] : "greedy";
  if (sampling != "greedy" && sampling != "sampled") {
    std::fprintf(stderr, "SAMPLING: greedy or sampled, not %s\n", sampling.c_str());
    return 2;
  }
  auto backend = tf::make_mlx_backend();
  auto model = tf::load_model(argv[1], *backend);
  const auto chunk = model->info().prefill_chunk;
  std::vector<std::int32_t> prompt(static_cast<std::size_t>(prompt_n));
  for (int i = 0; i < prompt_n; ++i) prompt[static_cast<std::size_t>(i)] = 100 + (i * 7919) % 20000;
  tf::SamplingParams choice;  // greedy, or a chat request's sampling
  choice.temperature = sampling == "sampled" ? 0.7f : 0.0f;
  choice.top_p = sampling == "sampled" ? 0.9f : 1.0f;
  const std::uint64_t seed = tf::seed_from_prompt(prompt);
  std::vector<double> prefill, decode, truncate_ms, step_ms, snapshot_ms, restore_ms;
  std::size_t state_bytes = 0, snapshot_bytes = 0;
  for (int r = 0; r < repeats + 1; ++r) {  // the first run warms up and is not counted
    auto state = model->new_state();
    auto t0 = std::chrono::steady_clock::now();
    std::vector<float> logits;
    for (std::int64_t at = 0; at < prompt_n; at += chunk) {
      const auto n = std::min<std::int64_t>(chunk, prompt_n - at);
      logits = model->forward(
          *state,
          std::span<const std::int32_t>(prompt).subspan(static_cast<std::size_t>(at), static_cast<std::size_t>(n)), 1);
    }
    const double p = seconds_since(t0);
    if (decode_from == "empty") {
      state = model->new_state();
      logits = model->forward(*state, std::span<const std::int32_t>(prompt).first(1), 1);
    }
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < decode_n; ++i) {
      const std::int32_t one[1] = {tf::sample_token(logits, choice, seed, state->length())};
      logits = model->forward(*state, one, 1);
    }
    const double d = seconds_since(t0);
    // A verify window of 8 rows of which 3 are kept, then the next step from there.
    std::vector<std::int32_t> window(8);
    for (int i = 0; i < 8; ++i) window[static_cast<std::size_t>(i)] = 100 + i * 13;
    model->forward(*state, window, 8);
    const auto kept = state->length() - 5;
    t0 = std::chrono::steady_clock::now();
    state->truncate(kept);
    const double tr = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    model->forward(*state, std::span<const std::int32_t>(window).subspan(3, 1), 1);
    const double st = seconds_since(t0);
    state_bytes = state->bytes();
    t0 = std::chrono::steady_clock::now();
    const auto saved = state->snapshot();
    const double sn = seconds_since(t0);
    snapshot_bytes = saved.size();
    t0 = std::chrono::steady_clock::now();
    state->restore(saved);
    const double rs = seconds_since(t0);
    if (r > 0) {
      prefill.push_back(prompt_n / p);
      decode.push_back(decode_n / d);
      truncate_ms.push_back(tr * 1e3);
      step_ms.push_back(st * 1e3);
      snapshot_ms.push_back(sn * 1e3);
      restore_ms.push_back(rs * 1e3);
    }
  }
  std::printf("model %s backend %s weights %.1f MiB\n", argv[1], backend->name().c_str(),
              static_cast<double>(model->info().weight_bytes) / (1 << 20));
  std::printf("prefill %d tokens: %.1f tokens/s (median of %d)\n", prompt_n, median(prefill), repeats);
  std::printf("decode %d tokens: %.1f tokens/s (median of %d, %s)\n", decode_n, median(decode), repeats,
              sampling == "sampled" ? "sampled: T 0.7, top-p 0.9" : "greedy");
  std::printf("rollback of an 8-row window to 3 rows: %.2f ms; the next 1-row step %.2f ms\n", median(truncate_ms),
              median(step_ms));
  std::printf("state %.1f MiB; snapshot %.1f MiB in %.2f ms, restore %.2f ms\n",
              static_cast<double>(state_bytes) / (1 << 20), static_cast<double>(snapshot_bytes) / (1 << 20),
              median(snapshot_ms), median(restore_ms));
  if (mtp_drafts > 0) decode_with_mtp(*model, prompt, decode_n, repeats, mtp_drafts);
  return 0;
}
