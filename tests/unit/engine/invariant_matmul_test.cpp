#include "backends/mlx/kernels/invariant_matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace tf {
namespace {

std::vector<float> randn(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Every row of a multi-row call equals, bit for bit, the same row computed alone, for row counts that
// exercise every block remainder and in-feature sizes with and without a tail.
TEST(InvariantMatmul, EachRowIsTheSameAloneAndInABatch) {
  for (std::int64_t k : {576, 1536, 67}) {
    const std::int64_t n = 200;
    auto w = randn(static_cast<std::size_t>(n * k), 1);
    for (std::int64_t rows : {2, 3, 5, 8, 16}) {
      auto x = randn(static_cast<std::size_t>(rows * k), static_cast<std::uint32_t>(rows + k));
      std::vector<float> batch(static_cast<std::size_t>(rows * n), NAN);
      invariant_matmul(x.data(), rows, w.data(), n, k, batch.data());
      for (std::int64_t r = 0; r < rows; ++r) {
        std::vector<float> alone(static_cast<std::size_t>(n), NAN);
        invariant_matmul(x.data() + r * k, 1, w.data(), n, k, alone.data());
        ASSERT_EQ(0, std::memcmp(alone.data(), batch.data() + r * n, static_cast<std::size_t>(n) * 4))
            << "row " << r << " of " << rows << ", k " << k;
      }
    }
  }
}

TEST(InvariantMatmul, MatchesAFloat64Reference) {
  const std::int64_t rows = 7, n = 130, k = 333;
  auto x = randn(static_cast<std::size_t>(rows * k), 3);
  auto w = randn(static_cast<std::size_t>(n * k), 4);
  std::vector<float> y(static_cast<std::size_t>(rows * n), NAN);
  invariant_matmul(x.data(), rows, w.data(), n, k, y.data());
  double err = 0, norm = 0;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < n; ++c) {
      double ref = 0;
      for (std::int64_t i = 0; i < k; ++i)
        ref += static_cast<double>(x[static_cast<std::size_t>(r * k + i)]) * w[static_cast<std::size_t>(c * k + i)];
      const double got = y[static_cast<std::size_t>(r * n + c)];
      err += (got - ref) * (got - ref);
      norm += ref * ref;
    }
  EXPECT_LT(std::sqrt(err / norm), 1e-6);
}

}  // namespace
}  // namespace tf
