// The host row ops of decode steps (kernels/row_ops.h) against MLX's own ops, which prefill chunks run: the two
// paths must compute the same functions (to float rounding), for every RoPE variant the families use.
#include "backends/mlx/kernels/row_ops.h"
#include "backends/mlx/kernels/invariant_attention.h"

#include <gtest/gtest.h>
#include <mlx/mlx.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/backend.h"

namespace tf {
namespace {
namespace mx = mlx::core;

std::vector<float> randn(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = scale * d(rng);
  return v;
}

mx::array as_mlx(const std::vector<float>& v, mx::Shape shape) {
  return mx::array(v.begin(), std::move(shape), mx::float32);
}

std::vector<float> values(mx::array a) {
  a = mx::contiguous(mx::astype(a, mx::float32));
  mx::eval(a);
  return {a.data<float>(), a.data<float>() + a.size()};
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0.0f;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

TEST(RowOps, RmsNormMatchesMlx) {
  for (int width : {576, 67, 8}) {
    const int rows = 5;
    auto x = randn(static_cast<std::size_t>(rows * width), 1, 3.0f), w = randn(static_cast<std::size_t>(width), 2);
    std::vector<float> y(x.size());
    rms_norm_rows(x.data(), rows, width, w.data(), 1e-5f, y.data());
    auto ref = values(mx::fast::rms_norm(as_mlx(x, {rows, width}), as_mlx(w, {width}), 1e-5f));
    EXPECT_LT(max_abs_diff(y, ref), 2e-5f) << "width " << width;
  }
}

// MLX's fast::rope over [1, heads, rows, head_dim], as the backend's prefill path calls it.
std::vector<float> mlx_rope(const std::vector<float>& x, int rows, int heads, int d, int start, const RopeSpec& s) {
  auto h = mx::transpose(mx::reshape(as_mlx(x, {rows, heads * d}), {1, rows, heads, d}), {0, 2, 1, 3});
  const int dims = s.rotary_dims > 0 ? s.rotary_dims : d;
  std::optional<mx::array> freqs;
  std::optional<float> base = s.base;
  if (!s.freq_factors.empty()) {
    std::vector<float> f(s.freq_factors.size());
    for (std::size_t i = 0; i < f.size(); ++i)
      f[i] = std::pow(s.base, 2.0f * static_cast<float>(i) / static_cast<float>(dims)) * s.freq_factors[i];
    freqs = mx::array(f.begin(), {static_cast<int>(f.size())}, mx::float32);
    base = std::nullopt;
  }
  auto r = mx::fast::rope(h, dims, s.interleaved, base, 1.0f, start, freqs);
  return values(mx::reshape(mx::transpose(r, {0, 2, 1, 3}), {rows, heads * d}));
}

TEST(RowOps, RopeMatchesMlxForEveryVariant) {
  const int rows = 4, heads = 3;
  struct Case {
    int head_dim;
    RopeSpec spec;
    int start;
  };
  RopeSpec llama{10000.0f, true, {}, 0}, neox{1000000.0f, false, {}, 0}, partial{10000000.0f, false, {}, 16};
  RopeSpec scaled{500000.0f, false, {}, 0};
  for (int i = 0; i < 32; ++i) scaled.freq_factors.push_back(1.0f + static_cast<float>(i % 5));
  for (const Case& c : {Case{64, llama, 0}, Case{64, llama, 3000}, Case{128, neox, 17}, Case{64, partial, 900},
                        Case{64, scaled, 1234}}) {
    auto x = randn(static_cast<std::size_t>(rows * heads * c.head_dim), 7);
    auto ours = x;
    rope_rows(ours.data(), rows, heads, c.head_dim, c.start, c.spec);
    const auto ref = mlx_rope(x, rows, heads, c.head_dim, c.start, c.spec);
    // Angles of a few thousand radians carry float32's rounding of pos * freq (~2e-4 rad at 3000) on both sides.
    EXPECT_LT(max_abs_diff(ours, ref), c.start > 1000 ? 2e-3f : 2e-5f)
        << "head_dim " << c.head_dim << " interleaved " << c.spec.interleaved << " rotary " << c.spec.rotary_dims
        << " start " << c.start;
  }
}

// M-RoPE (Qwen3.5's interleaved sections over 8 rotary dims of 32): a text row's three equal positions rotate as
// plain RoPE at that position, bit for bit; an image row's (t, h, w) turn frequency i with h where i % 3 == 1 and
// i < 3 * section[1], with w where i % 3 == 2 and i < 3 * section[2], else with t.
TEST(RowOps, MropeSectionsPickEachFrequencysPosition) {
  const int heads = 2, head_dim = 32, rows = 3;
  RopeSpec plain;
  plain.base = 1e7f;
  plain.rotary_dims = 8;
  RopeSpec m = plain;
  m.mrope_section = {2, 1, 1};
  const auto x = randn(static_cast<std::size_t>(rows * heads * head_dim), 7);
  auto a = x, b = x;
  rope_rows(a.data(), rows, heads, head_dim, 5, plain);
  const std::vector<std::int32_t> same = {5, 5, 5, 6, 6, 6, 7, 7, 7};
  rope_rows(b.data(), rows, heads, head_dim, 0, m, same.data());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
  // one row at (t, h, w) = (3, 9, 4): frequencies 0, 3 turn with t, 1 with h, 2 with w (sections [2, 1, 1])
  const std::vector<std::int32_t> thw = {3, 9, 4};
  const std::int32_t pos_of[4] = {3, 9, 4, 3};
  auto one = std::vector<float>(x.begin(), x.begin() + heads * head_dim);
  rope_rows(one.data(), 1, heads, head_dim, 0, m, thw.data());
  for (int i = 0; i < 4; ++i) {  // the same frequency rotated alone at its chosen position
    auto ref = std::vector<float>(x.begin(), x.begin() + heads * head_dim);
    rope_rows(ref.data(), 1, heads, head_dim, pos_of[i], plain);
    for (int h = 0; h < heads; ++h)
      for (int d : {i, i + 4}) EXPECT_EQ(one[std::size_t(h * head_dim + d)], ref[std::size_t(h * head_dim + d)]) << i;
  }
}

TEST(RowOps, ElementwiseOpsMatchMlx) {
  const int n = 1000;
  auto a = randn(n, 3, 4.0f), b = randn(n, 4);
  std::vector<float> y(n);
  swiglu_rows(a.data(), b.data(), n, y.data());
  auto g = as_mlx(a, {n});
  EXPECT_LT(max_abs_diff(y, values(mx::multiply(mx::multiply(g, mx::sigmoid(g)), as_mlx(b, {n})))), 1e-5f);
  sigmoid_gate_rows(b.data(), a.data(), n, y.data());
  EXPECT_LT(max_abs_diff(y, values(mx::multiply(as_mlx(b, {n}), mx::sigmoid(g)))), 1e-6f);
  add_rows(a.data(), b.data(), n, y.data());
  EXPECT_EQ(0.0f, max_abs_diff(y, values(mx::add(g, as_mlx(b, {n})))));
  // GELU's tanh approximation (transformers' gelu_pytorch_tanh), against the formula in double.
  gelu_tanh_glu_rows(a.data(), b.data(), n, y.data());
  double worst = 0.0;
  for (int i = 0; i < n; ++i) {
    const double x = a[static_cast<std::size_t>(i)];
    const double want = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))) *
                        b[static_cast<std::size_t>(i)];
    worst = std::max(worst, std::fabs(want - y[static_cast<std::size_t>(i)]) / (1.0 + std::fabs(want)));
  }
  EXPECT_LT(worst, 1e-6);
}

// Sliding-window attention: each row attends its last `window` positions only, the same as full attention over
// those keys alone, and a row's bits do not depend on the rows beside it in the call.
TEST(RowOps, WindowedAttentionSeesOnlyTheWindow) {
  const int heads = 4, kv_heads = 2, d = 16, window = 5;
  const std::int64_t len = 23, cap = 32;
  const auto keys = randn(static_cast<std::size_t>(kv_heads * cap * d), 11), vals = randn(keys.size(), 12);
  const auto q = randn(static_cast<std::size_t>(len * heads * d), 13);
  const AttentionShape windowed{heads, kv_heads, d, 0.25f, window}, full{heads, kv_heads, d, 0.25f, 0};
  std::vector<float> all(q.size()), one(static_cast<std::size_t>(heads * d));
  invariant_attention(q.data(), len, 0, keys.data(), vals.data(), cap, windowed, all.data());
  for (std::int64_t i = 0; i < len; ++i) {
    // The same row alone, at its own position,
    invariant_attention(q.data() + i * heads * d, 1, i, keys.data(), vals.data(), cap, windowed, one.data());
    EXPECT_EQ(0, std::memcmp(one.data(), all.data() + i * heads * d, one.size() * 4)) << "row " << i;
    // and as full attention over the window's keys alone (a cache that starts at the window's first position).
    const std::int64_t first = std::max<std::int64_t>(0, i + 1 - window);
    std::vector<float> k2(keys.size()), v2(vals.size());
    for (int g = 0; g < kv_heads; ++g)
      for (std::int64_t j = first; j <= i; ++j)
        for (int c = 0; c < d; ++c) {
          k2[static_cast<std::size_t>((g * cap + j - first) * d + c)] =
              keys[static_cast<std::size_t>((g * cap + j) * d + c)];
          v2[static_cast<std::size_t>((g * cap + j - first) * d + c)] =
              vals[static_cast<std::size_t>((g * cap + j) * d + c)];
        }
    std::vector<float> want(one.size());
    invariant_attention(q.data() + i * heads * d, 1, i - first, k2.data(), v2.data(), cap, full, want.data());
    EXPECT_EQ(0, std::memcmp(want.data(), one.data(), want.size() * 4)) << "row " << i;
  }
}

}  // namespace
}  // namespace tf
