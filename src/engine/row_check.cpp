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

// Median wall time of a `width`-row forward over a 1-row forward, both after a 12-token context, each
// repeated (the first runs may build graphs or caches). Only the drafting policy reads it, never the output.
double time_ratio(Model& model, std::span<const std::int32_t> tokens, int width) {
  auto state = model.new_state();
  model.forward(*state, tokens.first(12), 1);
  auto time_width = [&](int w) {
    std::vector<double> ms;
    for (int run = 0; run < 5; ++run) {
      const auto t0 = std::chrono::steady_clock::now();
      model.forward(*state, tokens.subspan(12, static_cast<std::size_t>(w)), w);
      ms.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      state->truncate(12);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  const double one = time_width(1);
  return one > 0.0 ? time_width(width) / one : 0.0;
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
  if (report.max_window >= 2) report.widest_cost = time_ratio(model, all.first(12 + report.max_window), report.max_window);
  return report;
}

}  // namespace tf
