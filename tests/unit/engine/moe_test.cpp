// The mixture-of-experts block (blocks/moe.h) and its router (blocks/moe_router.h): routing rules on hand-made
// logits; the expert layouts checkpoints store, read alike; and exactness: in a call of up to the backend's
// row-invariant size (decode, verify windows, shared rounds) a row's output is the same bits whatever rows share the
// call (the rows shuffled, each row alone), for SwiGLU and squared-ReLU experts.
#include "blocks/moe.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backends/mlx/mlx_backend.h"
#include "checkpoint/weight_reader.h"

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

TEST(MoeRouter, SqrtSoftplusAndHashRouting) {
  RouterSpec s;
  s.score = RouterSpec::Score::SqrtSoftplus;
  s.experts = 4;
  s.top_k = 2;
  s.norm_top_k = true;
  s.scaling = 1.5f;
  const std::vector<float> logits = {0.5f, -1.0f, 25.0f, 2.0f};
  const auto score = [](float x) { return std::sqrt(x > 20.0f ? x : std::log1p(std::exp(x))); };
  auto c = route_row(logits, s);  // learned: the two best scores, 2 and 3
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].expert, 2);
  EXPECT_EQ(c[1].expert, 3);
  EXPECT_FLOAT_EQ(c[0].weight, score(25.0f) / (score(25.0f) + score(2.0f) + 1e-20f) * 1.5f);
  // Hash routing: token 1's experts are the table's (3, 1), whatever the scores, weighed by their scores.
  s.token_experts = {0, 2, 3, 1, 2, 0};
  EXPECT_TRUE(router_spec_problem(s).empty());
  c = route_row(logits, s, 1);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].expert, 1);
  EXPECT_EQ(c[1].expert, 3);
  EXPECT_FLOAT_EQ(c[0].weight, score(-1.0f) / (score(-1.0f) + score(2.0f) + 1e-20f) * 1.5f);
  EXPECT_THROW(route_row(logits, s, 3), std::out_of_range);  // beyond the table's 3 tokens
  s.token_experts = {0, 0, 1, 2};
  EXPECT_FALSE(router_spec_problem(s).empty());  // one expert twice for a token
  s.token_experts = {0, 4};
  EXPECT_FALSE(router_spec_problem(s).empty());  // an expert out of range
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
                         [](const auto& p) { return p.param ? "SwiGLU" : "ReluSquared"; });

// Named float32 tensors in memory, standing in for a checkpoint.
class MemoryReader final : public WeightReader {
 public:
  void put(const std::string& name, std::vector<std::int64_t> shape, const std::vector<float>& values) {
    HostWeight w;
    w.name = name;
    w.shape = shape;
    w.cols = shape.back();
    w.rows = static_cast<std::int64_t>(values.size()) / w.cols;
    w.dtype = HostDType::F32;
    w.data.resize(values.size() * 4);
    std::memcpy(w.data.data(), values.data(), w.data.size());
    tensors_[name] = std::move(w);
  }
  bool has(const std::string& name) const override { return tensors_.count(name) != 0; }
  HostWeight read(const std::string& name) const override { return tensors_.at(name); }
  std::string path() const override { return "memory"; }

 private:
  std::map<std::string, HostWeight> tensors_;
};

// The same experts stored in each layout MoeBlock::load reads give the same block, bit for bit.
TEST(MoeLayouts, EveryStoredLayoutLoadsTheSameExperts) {
  auto backend = make_mlx_backend();
  Backend& b = *backend;
  std::mt19937 rng(11);
  constexpr std::int64_t E = 4, H = 32, I = 16;
  MoeConfig cfg;
  cfg.hidden = H;
  cfg.ffn = I;
  cfg.router.score = RouterSpec::Score::Softmax;
  cfg.router.experts = E;
  cfg.router.top_k = 2;
  const auto router = randn(E * H, rng, 0.5f);
  std::vector<std::vector<float>> gate, up, down;
  for (int e = 0; e < E; ++e) {
    gate.push_back(randn(I * H, rng, 0.2f));
    up.push_back(randn(I * H, rng, 0.2f));
    down.push_back(randn(H * I, rng, 0.2f));
  }
  const auto joined = [](const std::vector<std::vector<float>>& parts) {
    std::vector<float> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  const auto x = randn(8 * H, rng, 1.0f);
  std::vector<std::vector<float>> outputs;
  for (const bool gated : {true, false}) {
    cfg.gated = gated;
    outputs.clear();
    for (int layout = 0; layout < 4; ++layout) {
      if (!gated && layout == 1) continue;  // the fused gate|up stack holds gated experts only
      MemoryReader r;
      r.put("m.gate.weight", {E, H}, router);
      if (layout == 0) {
        for (int e = 0; e < E; ++e) {
          const std::string p = "m.experts." + std::to_string(e) + ".";
          r.put(p + "gate_proj.weight", {I, H}, gate[static_cast<std::size_t>(e)]);
          r.put(p + "up_proj.weight", {I, H}, up[static_cast<std::size_t>(e)]);
          r.put(p + "down_proj.weight", {H, I}, down[static_cast<std::size_t>(e)]);
        }
      } else if (layout == 1) {
        std::vector<std::vector<float>> fused;
        for (int e = 0; e < E; ++e) {
          fused.push_back(gate[static_cast<std::size_t>(e)]);
          fused.push_back(up[static_cast<std::size_t>(e)]);
        }
        r.put("m.experts.gate_up_proj", {E, 2 * I, H}, joined(fused));
        r.put("m.experts.down_proj", {E, H, I}, joined(down));
      } else if (layout == 2) {
        r.put("m.switch_mlp.gate_proj.weight", {E, I, H}, joined(gate));
        r.put("m.switch_mlp.up_proj.weight", {E, I, H}, joined(up));
        r.put("m.switch_mlp.down_proj.weight", {E, H, I}, joined(down));
      } else if (gated) {
        continue;  // fc1/fc2 name non-gated experts only
      } else {
        r.put("m.switch_mlp.fc1.weight", {E, I, H}, joined(up));
        r.put("m.switch_mlp.fc2.weight", {E, H, I}, joined(down));
      }
      WeightSource src(r, b);
      const MoeBlock m = MoeBlock::load(src, "m.", cfg);
      outputs.push_back(b.to_host(m.forward(b, b.from_host(x, 8, H))));
    }
    ASSERT_GE(outputs.size(), 3u);
    for (std::size_t i = 1; i < outputs.size(); ++i)
      EXPECT_EQ(std::memcmp(outputs[i].data(), outputs[0].data(), outputs[0].size() * 4), 0)
          << (gated ? "SwiGLU" : "squared-ReLU") << " layout " << i << " differs from per-expert tensors";
  }
}

// A stack of the wrong shape is one error naming the tensor.
TEST(MoeLayouts, AWrongStackShapeNamesTheTensor) {
  auto backend = make_mlx_backend();
  MemoryReader r;
  std::mt19937 rng(3);
  r.put("m.gate.weight", {4, 32}, randn(4 * 32, rng, 0.5f));
  r.put("m.switch_mlp.fc1.weight", {4, 8, 32}, randn(4 * 8 * 32, rng, 0.2f));
  r.put("m.switch_mlp.fc2.weight", {4, 32, 16}, randn(4 * 32 * 16, rng, 0.2f));
  MoeConfig cfg;
  cfg.hidden = 32;
  cfg.ffn = 16;
  cfg.gated = false;
  cfg.router.experts = 4;
  cfg.router.top_k = 2;
  WeightSource src(r, *backend);
  try {
    (void)MoeBlock::load(src, "m.", cfg);
    FAIL() << "loaded";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'm.switch_mlp.fc1.weight' is 4x8x32, expected a stack 4x16x32"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tf
