#include "engine/row_check.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <span>
#include <vector>

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

// The checks' fixed, model-independent token sequence: 12 tokens of context, then the checked positions.
std::vector<std::int32_t> check_tokens(const Model& model, int checked) {
  const auto vocab = static_cast<int>(model.info().vocab);
  std::vector<std::int32_t> tokens;
  for (int i = 0; i < 12 + checked; ++i) tokens.push_back(static_cast<std::int32_t>((1000 + 7919 * i) % vocab));
  return tokens;
}

// Serial decoding's logits: the 12-token context as one forward, then one token per forward; row i is the
// distribution after token 12 + i.
std::vector<std::vector<float>> serial_logits(Model& model, std::span<const std::int32_t> tokens, int n) {
  std::vector<std::vector<float>> serial;
  auto state = model.new_state();
  model.forward(*state, tokens.first(12), 1);
  for (int i = 0; i < n; ++i) serial.push_back(model.forward(*state, tokens.subspan(12 + static_cast<std::size_t>(i), 1), 1));
  return serial;
}

bool same_row(const float* got, const std::vector<float>& want) {
  return std::memcmp(got, want.data(), want.size() * sizeof(float)) == 0;
}

}  // namespace

namespace {

// The shared-round check: stream s first runs 12 + s % 3 tokens of context (so that the streams sit at
// different positions), then a window of the next widths[s] tokens, the windows filling max_rows, all in one
// Model::forward_parts; every row must equal serial decoding.
struct SharedLayout {
  std::vector<int> widths, skips;
  int checked = 0;  // serial rows the comparison needs
};
SharedLayout shared_layout(std::int64_t max_rows) {
  constexpr int kPattern[] = {1, 3, 1, 5, 2, 4};
  SharedLayout l;
  for (std::int64_t rows = 0; rows < max_rows;) {
    const int s = static_cast<int>(l.widths.size());
    l.widths.push_back(static_cast<int>(std::min<std::int64_t>(kPattern[s % 6], max_rows - rows)));
    l.skips.push_back(s % 3);
    l.checked = std::max(l.checked, l.skips.back() + l.widths.back());
    rows += l.widths.back();
  }
  return l;
}

bool shared_rounds_same(Model& model, std::span<const std::int32_t> all, const SharedLayout& l,
                        const std::vector<std::vector<float>>& serial) {
  std::vector<std::unique_ptr<SequenceState>> states;
  std::vector<ForwardPart> parts;
  for (std::size_t s = 0; s < l.widths.size(); ++s) {
    const auto context = 12 + static_cast<std::size_t>(l.skips[s]);
    states.push_back(model.new_state());
    model.forward(*states.back(), all.first(context), 1);
    parts.push_back({states.back().get(), all.subspan(context, static_cast<std::size_t>(l.widths[s])), false, false});
  }
  const auto out = model.forward_parts(parts);
  const auto vocab = static_cast<std::size_t>(model.info().vocab);
  if (out.size() != parts.size()) return false;
  for (std::size_t s = 0; s < parts.size(); ++s) {
    const auto w = static_cast<std::size_t>(l.widths[s]);
    if (out[s].logits.size() != w * vocab) return false;
    for (std::size_t j = 0; j < w; ++j)
      if (!same_row(out[s].logits.data() + j * vocab, serial[static_cast<std::size_t>(l.skips[s]) + j])) return false;
  }
  return true;
}

}  // namespace

RowCheckReport check_rows(Model& model, int max_window, std::int64_t shared_rows) {
  RowCheckReport report;
  const auto vocab = static_cast<std::size_t>(model.info().vocab);
  const SharedLayout layout = shared_rows >= 2 ? shared_layout(shared_rows) : SharedLayout{};
  const int serial_rows = std::max(max_window, layout.checked);
  const auto tokens = check_tokens(model, serial_rows);
  const std::span<const std::int32_t> all(tokens);
  const auto prefix = all.first(12);
  const auto serial = serial_logits(model, all, serial_rows);
  bool all_ok = true;
  for (int width = 2; width <= max_window; ++width) {
    auto state = model.new_state();
    model.forward(*state, prefix, 1);
    const auto rows = model.forward(*state, all.subspan(12, static_cast<std::size_t>(width)), width);
    bool same = rows.size() == static_cast<std::size_t>(width) * vocab;
    for (int r = 0; same && r < width; ++r) same = same_row(rows.data() + static_cast<std::size_t>(r) * vocab, serial[static_cast<std::size_t>(r)]);
    report.widths.emplace_back(width, same);
    if (same && all_ok) report.max_window = width;
    all_ok = all_ok && same;
  }
  if (report.max_window >= 2) report.costs = time_widths(model, all.first(12 + report.max_window), report.max_window);
  if (shared_rows >= 2) {
    report.shared_checked = true;
    report.shared_rows = shared_rounds_same(model, all, layout, serial) ? shared_rows : 0;
  }
  return report;
}

}  // namespace tf
