#include "engine/row_check.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <span>
#include <vector>

#include "engine/engine.h"
#include "families/model.h"

namespace tf {

namespace {

// A forward of 1 row slower than this is a backend where verify cost grows with rows anyway (the CPU: ~140 ms
// for SmolLM2); the per-width timing is skipped there, since it would add seconds to startup. GPU decode
// steps of 8B- to 27B-class models (6-18 ms on an H200) are timed: 3 runs per width cost well under a second.
constexpr double kTimedForwardLimit = 0.05;  // seconds

// Median wall time of a `width`-row forward after a 12-token context (the first run of a width may build
// graphs; the median of 3 discards it). Where the backend finds greedy tokens itself, the forward timed is
// that one (what a greedy round costs: ids, not logits, come back).
double time_width(Model& model, SequenceState& state, std::span<const std::int32_t> tokens, int width) {
  std::vector<double> s;
  for (int run = 0; run < 3; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto window = tokens.subspan(12, static_cast<std::size_t>(width));
    if (model.greedy_on_backend()) model.forward_greedy(state, window, width);
    else model.forward(state, window, width);
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    state.truncate(12);
  }
  std::sort(s.begin(), s.end());
  return s[1];
}

// Wall time of each verify width 2..max_window over one decode step; only the drafting policy reads it,
// never the output.
std::vector<double> time_widths(Model& model, std::span<const std::int32_t> tokens, int max_window) {
  auto state = model.new_state();
  model.forward(*state, tokens.first(12), 1);
  const double one = time_width(model, *state, tokens, 1);
  std::vector<double> costs;
  if (one <= 0.0 || one > kTimedForwardLimit) return costs;
  for (int w = 2; w <= max_window; ++w) costs.push_back(time_width(model, *state, tokens, w) / one);
  return costs;
}

}  // namespace

RowCheckReport check_verify_rows(Model& model, int max_window) {
  RowCheckReport report;
  const auto vocab = static_cast<std::size_t>(model.info().vocab);
  // A fixed, model-independent token sequence: 12 tokens of context, then the checked positions.
  std::vector<std::int32_t> tokens;
  for (int i = 0; i < 12 + max_window; ++i)
    tokens.push_back(static_cast<std::int32_t>((1000 + 7919 * i) % static_cast<int>(vocab)));
  const std::span<const std::int32_t> all(tokens);
  const auto prefix = all.first(12);
  // Serial: one token per forward.
  std::vector<std::vector<float>> serial;
  {
    auto state = model.new_state();
    model.forward(*state, prefix, 1);
    for (int i = 0; i < max_window; ++i) serial.push_back(model.forward(*state, all.subspan(12 + static_cast<std::size_t>(i), 1), 1));
  }
  bool all_ok = true;
  for (int width = 2; width <= max_window; ++width) {
    auto state = model.new_state();
    model.forward(*state, prefix, 1);
    const auto rows = model.forward(*state, all.subspan(12, static_cast<std::size_t>(width)), width);
    bool same = rows.size() == static_cast<std::size_t>(width) * vocab;
    for (int r = 0; same && r < width; ++r)
      same = std::memcmp(rows.data() + static_cast<std::size_t>(r) * vocab, serial[static_cast<std::size_t>(r)].data(),
                         vocab * sizeof(float)) == 0;
    report.widths.emplace_back(width, same);
    if (same && all_ok) report.max_window = width;
    all_ok = all_ok && same;
  }
  if (report.max_window >= 2) report.costs = time_widths(model, all.first(12 + report.max_window), report.max_window);
  return report;
}

}  // namespace tf
