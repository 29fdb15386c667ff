// The host row ops of decode steps (kernels/row_ops.h) against MLX's own ops, which prefill chunks run: the two
// paths must compute the same functions (to float rounding), for every RoPE variant the families use.
#include "backends/mlx/kernels/row_ops.h"

#include <gtest/gtest.h>
#include <mlx/mlx.h>

#include <cmath>
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
}

}  // namespace
}  // namespace tf
