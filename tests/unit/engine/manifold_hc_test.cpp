// Manifold-constrained hyper-connections' mixing (blocks/manifold_hyper_connections.h): a row's pre, post and
// comb from its logits against transformers' Glm5NextTextHyperConnection written out in double (sigmoid maps,
// a row softmax, column then row/column Sinkhorn rounds with + hc_eps in every sum), and comb near doubly
// stochastic after 20 rounds (columns to 1e-5, rows to 1e-2).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "blocks/manifold_hyper_connections.h"

namespace tf {
namespace {

TEST(ManifoldMixing, MatchesTheReferenceInDouble) {
  for (const int S : {2, 4}) {
    std::mt19937 rng(static_cast<std::uint32_t>(S));
    std::normal_distribution<float> nd;
    const int mix = (2 + S) * S;
    std::vector<float> logits(static_cast<std::size_t>(mix)), base(static_cast<std::size_t>(mix)), scale(3);
    for (auto& v : logits) v = 2.0f * nd(rng);
    for (auto& v : base) v = 0.5f * nd(rng);
    for (auto& v : scale) v = 1.0f + 0.2f * nd(rng);
    const float eps = 1e-6f;
    std::vector<float> pre(static_cast<std::size_t>(S)), post(static_cast<std::size_t>(S)),
        comb(static_cast<std::size_t>(S * S));
    manifold_mixing(logits.data(), S, base, scale, 20, eps, pre.data(), post.data(), comb.data());

    const auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
    std::vector<double> c(static_cast<std::size_t>(S * S));
    for (int s = 0; s < S; ++s) {
      EXPECT_NEAR(pre[s], sig(double(logits[s]) * scale[0] + base[s]) + eps, 1e-6);
      EXPECT_NEAR(post[s], 2.0 * sig(double(logits[S + s]) * scale[1] + base[S + s]), 1e-6);
    }
    for (int i = 0; i < S; ++i) {
      double sum = 0.0;
      for (int j = 0; j < S; ++j)
        sum += c[i * S + j] = std::exp(double(logits[2 * S + i * S + j]) * scale[2] + base[2 * S + i * S + j]);
      for (int j = 0; j < S; ++j) c[i * S + j] = c[i * S + j] / sum + eps;
    }
    const auto cols = [&] {
      for (int j = 0; j < S; ++j) {
        double sum = 0.0;
        for (int i = 0; i < S; ++i) sum += c[i * S + j];
        for (int i = 0; i < S; ++i) c[i * S + j] /= sum + eps;
      }
    };
    cols();
    for (int it = 1; it < 20; ++it) {
      for (int i = 0; i < S; ++i) {
        double sum = 0.0;
        for (int j = 0; j < S; ++j) sum += c[i * S + j];
        for (int j = 0; j < S; ++j) c[i * S + j] /= sum + eps;
      }
      cols();
    }
    for (int i = 0; i < S; ++i) {
      double row = 0.0, col = 0.0;
      for (int j = 0; j < S; ++j) {
        EXPECT_NEAR(comb[i * S + j], c[i * S + j], 1e-6) << S << " streams, (" << i << ", " << j << ")";
        row += comb[i * S + j];
        col += comb[j * S + i];
      }
      EXPECT_NEAR(row, 1.0, 1e-2);  // 20 rounds leave rows a little off (the reference's too)
      EXPECT_NEAR(col, 1.0, 1e-5);  // the last round normalises the columns
    }
  }
}

}  // namespace
}  // namespace tf
