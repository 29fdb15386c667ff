// The MLX backend's Mamba-2 scan kernel (kernels/mamba2_scan.h): against a float64 recurrence written out
// plainly, and the same bits however the rows are split into calls (a prefill chunk, decode rows, a verify
// window), whatever the thread count: what drafted == serial and resumed == fresh rest on.
#include "backends/mlx/kernels/mamba2_scan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/mlx/kernels/chunk_pool.h"

namespace tf {
namespace {

struct Case {
  Mamba2Spec spec;
  std::vector<float> xbc, dt, conv, conv_bias, a_log, dt_bias, d;
  Mamba2Weights weights() const { return {conv.data(), conv_bias.data(), a_log.data(), dt_bias.data(), d.data()}; }
};

Case make_case(int heads, int head_dim, int groups, int state, std::int64_t rows, std::uint32_t seed) {
  Case c;
  c.spec.heads = heads;
  c.spec.head_dim = head_dim;
  c.spec.groups = groups;
  c.spec.state_size = state;
  c.spec.conv_kernel = 4;
  c.spec.dt_min = 0.0f;
  c.spec.dt_max = 2.0f;  // clamps some steps
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  const auto fill = [&](std::vector<float>& v, std::size_t n, float scale, float shift = 0.0f) {
    v.resize(n);
    for (auto& x : v) x = shift + scale * nd(rng);
  };
  const auto C = static_cast<std::size_t>(c.spec.conv_channels());
  fill(c.xbc, static_cast<std::size_t>(rows) * C, 1.0f);
  fill(c.dt, static_cast<std::size_t>(rows * heads), 1.0f);
  fill(c.conv, C * 4, 0.5f);
  fill(c.conv_bias, C, 0.1f);
  fill(c.a_log, static_cast<std::size_t>(heads), 0.5f);
  fill(c.dt_bias, static_cast<std::size_t>(heads), 0.5f);
  fill(c.d, static_cast<std::size_t>(heads), 0.1f, 1.0f);
  return c;
}

// The recurrence as families-and-formats §1.4 writes it, in double.
std::vector<double> reference(const Case& c, std::int64_t rows) {
  const auto& s = c.spec;
  const std::int64_t C = s.conv_channels(), inner = s.inner();
  const int K = s.conv_kernel, P = s.head_dim, N = s.state_size;
  std::vector<double> S(static_cast<std::size_t>(inner * N)), out(static_cast<std::size_t>(rows * inner));
  for (std::int64_t t = 0; t < rows; ++t) {
    std::vector<double> y(static_cast<std::size_t>(C));
    for (std::int64_t ch = 0; ch < C; ++ch) {
      double acc = c.conv_bias[static_cast<std::size_t>(ch)];
      for (int j = 0; j < K; ++j) {
        const std::int64_t src = t - (K - 1) + j;  // zero before the first row: an empty state
        if (src >= 0)
          acc += double(c.conv[static_cast<std::size_t>(ch * K + j)]) * c.xbc[static_cast<std::size_t>(src * C + ch)];
      }
      y[static_cast<std::size_t>(ch)] = acc / (1.0 + std::exp(-acc));
    }
    for (int h = 0; h < s.heads; ++h) {
      const int g = h / (s.heads / s.groups);
      double step = double(c.dt[static_cast<std::size_t>(t * s.heads + h)]) + c.dt_bias[static_cast<std::size_t>(h)];
      step = step > 20.0 ? step : std::log1p(std::exp(step));
      step = std::min(std::max(step, double(s.dt_min)), double(s.dt_max));
      const double decay = std::exp(-step * std::exp(double(c.a_log[static_cast<std::size_t>(h)])));
      for (int p = 0; p < P; ++p) {
        const double x = y[static_cast<std::size_t>(h * P + p)];
        double acc = 0.0;
        for (int n = 0; n < N; ++n) {
          double& st = S[static_cast<std::size_t>((h * P + p) * N + n)];
          st = st * decay + step * y[static_cast<std::size_t>(inner + g * N + n)] * x;
          acc += st * y[static_cast<std::size_t>(inner + (s.groups + g) * N + n)];
        }
        out[static_cast<std::size_t>(t * inner + h * P + p)] = acc + x * c.d[static_cast<std::size_t>(h)];
      }
    }
  }
  return out;
}

// Runs the rows in calls of the given sizes (in order), the state carried from call to call.
std::vector<float> run_split(const Case& c, std::int64_t rows, const std::vector<std::int64_t>& calls,
                             std::vector<float>* state_after = nullptr) {
  const auto& s = c.spec;
  const std::int64_t C = s.conv_channels(), inner = s.inner();
  std::vector<float> state(static_cast<std::size_t>(mamba2_state_floats(s))),
      out(static_cast<std::size_t>(rows * inner));
  std::int64_t at = 0;
  for (std::size_t i = 0; at < rows; ++i) {
    const std::int64_t n = std::min(i < calls.size() ? calls[i] : rows, rows - at);
    mamba2_rows(c.xbc.data() + at * C, c.dt.data() + at * s.heads, n, c.weights(), s, state.data(), state.data(),
                out.data() + at * inner);
    at += n;
  }
  if (state_after != nullptr) *state_after = state;
  return out;
}

TEST(Mamba2Scan, MatchesTheRecurrenceInDouble) {
  for (const auto& [state, rows] : {std::pair{32, 150}, std::pair{20, 40}}) {  // 20: a tail past the 8-lane blocks
    const Case c = make_case(4, 16, 2, state, rows, 7);
    const auto ours = run_split(c, rows, {rows});
    const auto want = reference(c, rows);
    double worst = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::fabs(double(ours[i]) - want[i]));
      scale = std::max(scale, std::fabs(want[i]));
    }
    EXPECT_LT(worst, 2e-5 * scale) << "state " << state << ": max |diff| " << worst << " of max |y| " << scale;
  }
}

TEST(Mamba2Scan, SameBitsHoweverTheRowsAreSplitOrThreaded) {
  const std::int64_t rows = 203;  // past several 64-row blocks, ending mid-block
  const Case c = make_case(8, 16, 2, 24, rows, 11);
  std::vector<float> state_whole;
  const auto whole = run_split(c, rows, {rows}, &state_whole);
  for (const auto& calls : std::vector<std::vector<std::int64_t>>{{1}, {16, 1, 1, 5}, {63, 2, 64, 1}, {100, 3, 7}}) {
    std::vector<float> state;
    std::vector<std::int64_t> pattern;
    while (static_cast<std::int64_t>(pattern.size()) < rows) pattern.insert(pattern.end(), calls.begin(), calls.end());
    const auto split = run_split(c, rows, pattern, &state);
    EXPECT_EQ(0, std::memcmp(split.data(), whole.data(), whole.size() * 4)) << "calls of " << calls.front() << "...";
    EXPECT_EQ(0, std::memcmp(state.data(), state_whole.data(), state.size() * 4));
  }
  SerialChunks one_thread;
  const auto serial = run_split(c, rows, {rows});
  EXPECT_EQ(0, std::memcmp(serial.data(), whole.data(), whole.size() * 4));
}

}  // namespace
}  // namespace tf
