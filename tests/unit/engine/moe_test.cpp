// The mixture-of-experts block (blocks/moe.h) and its router (blocks/moe_router.h): routing rules on hand-made
// logits, and exactness: in a call of up to the backend's row-invariant size (decode, verify windows, shared
// rounds) a row's output is the same bits whatever rows share the call (the rows shuffled, each row alone), for
// SwiGLU and squared-ReLU experts.
#include "blocks/moe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "backends/mlx/mlx_backend.h"

namespace tf {
namespace {

std::vector<float> randn(std::size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = scale * d(rng);
  return v;
}

DeviceWeight upload(Backend& b, std::int64_t rows, std::int64_t cols, std::mt19937& rng, float scale) {
  HostWeight w;
  w.name = "test";
  w.rows = rows;
  w.cols = cols;
  w.shape = {rows, cols};
  w.dtype = HostDType::F32;
  const auto v = randn(static_cast<std::size_t>(rows * cols), rng, scale);
  w.data.resize(v.size() * 4);
  std::memcpy(w.data.data(), v.data(), w.data.size());
  return b.upload(w);
}

TEST(MoeRouter, SigmoidGroupsBiasAndScaling) {
  RouterSpec s;
  s.score = RouterSpec::Score::Sigmoid;
  s.experts = 8;
  s.top_k = 2;
  s.groups = 2;
  s.top_groups = 1;
  s.norm_top_k = true;
  s.scaling = 2.5f;
  // Group 0 (experts 0-3) has the best single expert (0), group 1 the best pair (5 + 6): group 1 wins.
  const std::vector<float> logits = {3.0f, -4.0f, -4.0f, -4.0f, -4.0f, 2.0f, 2.5f, -4.0f};
  auto c = route_row(logits, s);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].expert, 5);
  EXPECT_EQ(c[1].expert, 6);
  const float s5 = 1.0f / (1.0f + std::exp(-2.0f)), s6 = 1.0f / (1.0f + std::exp(-2.5f));
  EXPECT_FLOAT_EQ(c[0].weight, s5 / (s5 + s6 + 1e-20f) * 2.5f);
  EXPECT_FLOAT_EQ(c[0].weight + c[1].weight, 2.5f);
  // A correction bias picks expert 7 over 5 but does not weigh it: its weight is its unbiased score.
  s.correction_bias = {0, 0, 0, 0, 0, 0, 0, 10.0f};
  c = route_row(logits, s);
  EXPECT_EQ(c[0].expert, 6);
  EXPECT_EQ(c[1].expert, 7);
  const float s7 = 1.0f / (1.0f + std::exp(4.0f));
  EXPECT_FLOAT_EQ(c[1].weight, s7 / (s6 + s7 + 1e-20f) * 2.5f);
}

TEST(MoeRouter, SoftmaxTopKWithoutRenormalising) {
  RouterSpec s;
  s.experts = 4;
  s.top_k = 2;
  const std::vector<float> logits = {0.0f, 1.0f, 1.0f, -1.0f};  // a tie: the lower index first
  const auto c = route_row(logits, s);
  const float z = 1.0f + 2.0f * std::exp(1.0f) + std::exp(-1.0f);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].expert, 1);
  EXPECT_EQ(c[1].expert, 2);
  EXPECT_NEAR(c[0].weight, std::exp(1.0f) / z, 1e-6f);
  EXPECT_FALSE(router_spec_problem(s).size());
  s.groups = 2;
  EXPECT_TRUE(router_spec_problem(s).size());  // group-limited softmax routing is not read
}

class MoeExactness : public ::testing::TestWithParam<bool> {};

TEST_P(MoeExactness, RowsAreIndependentOfTheirNeighbours) {
  auto backend = make_mlx_backend();
  Backend& b = *backend;
  std::mt19937 rng(7);
  MoeBlock m;
  m.cfg.hidden = 64;
  m.cfg.ffn = 32;
  m.cfg.shared_ffn = 48;
  m.cfg.gated = GetParam();
  m.cfg.router.score = RouterSpec::Score::Sigmoid;
  m.cfg.router.experts = 8;
  m.cfg.router.top_k = 3;
  m.cfg.router.groups = 4;
  m.cfg.router.top_groups = 2;
  m.cfg.router.norm_top_k = true;
  m.cfg.router.scaling = 1.5f;
  m.cfg.router.correction_bias = randn(8, rng, 0.1f);
  m.router = upload(b, 8, 64, rng, 0.5f);
  for (int e = 0; e < 8; ++e) {
    if (m.cfg.gated) m.gate.push_back(upload(b, 32, 64, rng, 0.2f));
    m.up.push_back(upload(b, 32, 64, rng, 0.2f));
    m.down.push_back(upload(b, 64, 32, rng, 0.2f));
  }
  if (m.cfg.gated) m.shared_gate = upload(b, 48, 64, rng, 0.2f);
  m.shared_up = upload(b, 48, 64, rng, 0.2f);
  m.shared_down = upload(b, 64, 48, rng, 0.2f);

  const std::int64_t n = b.invariant_rows(), H = 64;  // 16 rows on 8 experts, 3 each: experts serve several rows
  ASSERT_GE(n, 8);
  const auto x = randn(static_cast<std::size_t>(n * H), rng, 1.0f);
  const auto all = b.to_host(m.forward(b, b.from_host(x, n, H)));
  ASSERT_EQ(all.size(), x.size());

  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<float> shuffled(x.size());
  for (std::int64_t i = 0; i < n; ++i)
    std::memcpy(shuffled.data() + i * H, x.data() + order[static_cast<std::size_t>(i)] * H, H * sizeof(float));
  const auto out = b.to_host(m.forward(b, b.from_host(shuffled, n, H)));
  int differ = 0;
  for (std::int64_t i = 0; i < n; ++i)
    differ +=
        std::memcmp(out.data() + i * H, all.data() + order[static_cast<std::size_t>(i)] * H, H * sizeof(float)) != 0;
  EXPECT_EQ(differ, 0) << "rows whose bits changed when their neighbours did";

  // Each row alone, in calls of one row.
  differ = 0;
  for (std::int64_t r = 0; r < n; r += 3) {
    const std::vector<float> one(x.begin() + r * H, x.begin() + (r + 1) * H);
    const auto y = b.to_host(m.forward(b, b.from_host(one, 1, H)));
    differ += std::memcmp(y.data(), all.data() + r * H, H * sizeof(float)) != 0;
  }
  EXPECT_EQ(differ, 0) << "rows whose bits changed alone";
  float biggest = 0.0f;
  for (const float v : all) biggest = std::max(biggest, std::fabs(v));
  EXPECT_GT(biggest, 1e-3f);  // the experts did something
}

INSTANTIATE_TEST_SUITE_P(Experts, MoeExactness, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "SwiGLU" : "ReluSquared"; });

}  // namespace
}  // namespace tf
