// Kimi delta attention on the MLX CPU kernel (kernels/gated_delta.h with channel_decay, blocks/kda.h): against
// the recurrence written out plainly in double as transformers' recurrent_kimi_delta_attention does it (conv +
// SiLU, L2-normed q and k, q scaled by d^-0.5, a decay per key channel with and without the lower bound), the
// same bits however the rows are split into calls (what drafted == serial rests on), and the per-head decay
// path of Gated DeltaNet unchanged by the per-channel one beside it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/mlx/kernels/gated_delta.h"

namespace tf {
namespace {

struct Case {
  GatedDeltaShape shape;
  std::vector<float> qkv, a, b, conv, a_log, dt_bias;
  GatedDeltaWeights weights() const { return {conv.data(), a_log.data(), dt_bias.data()}; }
};

Case make_case(int heads, int dim, float lower_bound, std::int64_t rows, std::uint32_t seed) {
  Case c;
  c.shape = {.k_heads = heads,
             .v_heads = heads,
             .k_dim = dim,
             .v_dim = dim,
             .conv_kernel = 4,
             .channel_decay = true,
             .decay_lower_bound = lower_bound};
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  const auto fill = [&](std::vector<float>& v, std::size_t n, float scale, float shift = 0.0f) {
    v.resize(n);
    for (auto& x : v) x = shift + scale * nd(rng);
  };
  const auto C = static_cast<std::size_t>(c.shape.channels()), HD = static_cast<std::size_t>(heads * dim);
  fill(c.qkv, static_cast<std::size_t>(rows) * C, 1.0f);
  fill(c.a, static_cast<std::size_t>(rows) * HD, 1.0f);
  fill(c.b, static_cast<std::size_t>(rows * heads), 1.0f);
  fill(c.conv, C * 4, 0.5f);
  fill(c.a_log, static_cast<std::size_t>(heads), 0.5f);
  fill(c.dt_bias, HD, 0.5f);
  return c;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// transformers' recurrence (state [d_k, d_v] per head), in double.
std::vector<double> reference(const Case& c, std::int64_t rows) {
  const auto& s = c.shape;
  const std::int64_t C = s.channels(), HD = static_cast<std::int64_t>(s.v_heads) * s.k_dim;
  const int K = s.conv_kernel, d = s.k_dim;
  std::vector<double> S(static_cast<std::size_t>(s.v_heads * d * d)), out(static_cast<std::size_t>(rows * HD));
  for (std::int64_t t = 0; t < rows; ++t) {
    std::vector<double> y(static_cast<std::size_t>(C));
    for (std::int64_t ch = 0; ch < C; ++ch) {
      double acc = 0.0;
      for (int j = 0; j < K; ++j)
        if (const std::int64_t src = t - (K - 1) + j; src >= 0)
          acc += double(c.conv[static_cast<std::size_t>(ch * K + j)]) * c.qkv[static_cast<std::size_t>(src * C + ch)];
      y[static_cast<std::size_t>(ch)] = acc * sigmoid(acc);
    }
    for (int h = 0; h < s.v_heads; ++h) {
      double* q = y.data() + h * d;
      double* k = y.data() + HD + h * d;
      const double* v = y.data() + 2 * HD + h * d;
      double qs = 0.0, ks = 0.0;
      for (int i = 0; i < d; ++i) qs += q[i] * q[i], ks += k[i] * k[i];
      for (int i = 0; i < d; ++i)
        q[i] = q[i] / std::sqrt(qs + 1e-6) / std::sqrt(double(d)), k[i] /= std::sqrt(ks + 1e-6);
      const double beta = sigmoid(c.b[static_cast<std::size_t>(t * s.v_heads + h)]);
      const double rate = std::exp(double(c.a_log[static_cast<std::size_t>(h)]));
      double* St = S.data() + static_cast<std::ptrdiff_t>(h) * d * d;
      for (int i = 0; i < d; ++i) {
        const double x =
            double(c.a[static_cast<std::size_t>(t * HD + h * d + i)]) + c.dt_bias[static_cast<std::size_t>(h * d + i)];
        const double g = s.decay_lower_bound < 0.0f ? s.decay_lower_bound * sigmoid(rate * x)
                                                    : -rate * (x > 20.0 ? x : std::log1p(std::exp(x)));
        for (int j = 0; j < d; ++j) St[i * d + j] *= std::exp(g);
      }
      for (int j = 0; j < d; ++j) {
        double mem = 0.0;
        for (int i = 0; i < d; ++i) mem += St[i * d + j] * k[i];
        const double delta = (v[j] - mem) * beta;
        for (int i = 0; i < d; ++i) St[i * d + j] += k[i] * delta;
      }
      for (int j = 0; j < d; ++j) {
        double o = 0.0;
        for (int i = 0; i < d; ++i) o += St[i * d + j] * q[i];
        out[static_cast<std::size_t>(t * HD + h * d + j)] = o;
      }
    }
  }
  return out;
}

std::vector<float> run_split(const Case& c, std::int64_t rows, const std::vector<std::int64_t>& calls,
                             std::vector<float>* state_after = nullptr) {
  const auto& s = c.shape;
  const std::int64_t C = s.channels(), HD = static_cast<std::int64_t>(s.v_heads) * s.k_dim;
  std::vector<float> conv(static_cast<std::size_t>(s.conv_floats())), state(static_cast<std::size_t>(s.state_floats()));
  std::vector<float> out(static_cast<std::size_t>(rows * HD));
  std::int64_t at = 0;
  for (std::size_t i = 0; at < rows; ++i) {
    const std::int64_t n = std::min(i < calls.size() ? calls[i] : rows, rows - at);
    gated_delta_rows(c.qkv.data() + at * C, c.a.data() + at * HD, c.b.data() + at * s.v_heads, n, c.weights(), s,
                     conv.data(), state.data(), conv.data(), state.data(), out.data() + at * HD);
    at += n;
  }
  if (state_after != nullptr) {
    *state_after = conv;
    state_after->insert(state_after->end(), state.begin(), state.end());
  }
  return out;
}

TEST(KdaKernel, MatchesTheRecurrenceInDouble) {
  for (const float bound : {-5.0f, 0.0f}) {  // GLM's lower bound, and the softplus form without one
    const std::int64_t rows = 70;
    const Case c = make_case(3, 16, bound, rows, 5);
    const auto ours = run_split(c, rows, {rows});
    const auto want = reference(c, rows);
    double worst = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::fabs(double(ours[i]) - want[i]));
      scale = std::max(scale, std::fabs(want[i]));
    }
    EXPECT_GT(scale, 0.1);
    EXPECT_LT(worst, 1e-5 * scale) << "bound " << bound << ": max |diff| " << worst << " of max |o| " << scale;
  }
}

TEST(KdaKernel, EachChannelDecaysOnItsOwn) {
  // A per-channel decay that differs from the per-head one of the same inputs: the channel path is not the
  // head path in disguise (a and dt_bias of the first channel of each head given to both).
  const std::int64_t rows = 12;
  Case c = make_case(2, 16, -5.0f, rows, 9);
  const auto channel = run_split(c, rows, {rows});
  Case head = c;
  head.shape.channel_decay = false;
  head.shape.decay_lower_bound = 0.0f;
  head.a.clear();
  for (std::int64_t t = 0; t < rows; ++t)
    for (int h = 0; h < 2; ++h) head.a.push_back(c.a[static_cast<std::size_t>(t * 32 + h * 16)]);
  head.dt_bias = {c.dt_bias[0], c.dt_bias[16]};
  const auto per_head = run_split(head, rows, {rows});
  EXPECT_NE(0, std::memcmp(channel.data(), per_head.data(), channel.size() * 4));
}

TEST(KdaKernel, SameBitsHoweverTheRowsAreSplit) {
  const std::int64_t rows = 61;
  const Case c = make_case(4, 32, -5.0f, rows, 13);
  std::vector<float> state_whole;
  const auto whole = run_split(c, rows, {rows}, &state_whole);
  for (const auto& calls : std::vector<std::vector<std::int64_t>>{{1}, {16, 1, 1, 5}, {40, 2, 3}}) {
    std::vector<float> state;
    std::vector<std::int64_t> pattern;
    while (static_cast<std::int64_t>(pattern.size()) < rows) pattern.insert(pattern.end(), calls.begin(), calls.end());
    const auto split = run_split(c, rows, pattern, &state);
    EXPECT_EQ(0, std::memcmp(split.data(), whole.data(), whole.size() * 4)) << "calls of " << calls.front() << "...";
    EXPECT_EQ(0, std::memcmp(state.data(), state_whole.data(), state.size() * 4));
  }
}

}  // namespace
}  // namespace tf
