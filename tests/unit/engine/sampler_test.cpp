#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>

#include <tuple>
#include "engine/keyed_noise.h"
#include "engine/logit_adjust.h"

namespace tf {
namespace {

std::vector<float> random_logits(std::size_t n, std::uint32_t seed, float spread = 4.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, spread);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(KeyedNoise, PortableLogMatchesLibmClosely) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 200000; ++i) {
    const double u = key_to_unit(rng());
    const double ours = portable_log(u), ref = std::log(u);
    ASSERT_NEAR(ours, ref, 4e-16 * std::max(1.0, std::fabs(ref))) << u;
  }
  EXPECT_NEAR(portable_log(1.0), 0.0, 1e-300);
  EXPECT_NEAR(portable_log(std::exp(1.0)), 1.0, 1e-15);
}

TEST(KeyedNoise, UnitIsStrictlyInsideZeroOne) {
  EXPECT_GT(key_to_unit(0), 0.0);
  EXPECT_LT(key_to_unit(~0ull), 1.0);
}

TEST(KeyedNoise, IsAPureFunctionOfSeedPositionToken) {
  EXPECT_EQ(gumbel_noise(7, 100, 42), gumbel_noise(7, 100, 42));
  EXPECT_NE(gumbel_noise(7, 100, 42), gumbel_noise(8, 100, 42));
  EXPECT_NE(gumbel_noise(7, 100, 42), gumbel_noise(7, 101, 42));
  EXPECT_NE(gumbel_noise(7, 100, 42), gumbel_noise(7, 100, 43));
}

TEST(Sampler, GreedyTakesTheMaxWithTiesToTheLowestId) {
  std::vector<float> l = {1.0f, 3.0f, -2.0f, 3.0f};
  SamplingParams g;
  g.temperature = 0.0f;
  EXPECT_EQ(sample_token(l, g, 1, 0), 1);
}

// The two-pass greedy equals the plain scan `if (l[i] > l[best]) best = i` on ties, signed zeros, infinities
// and NaNs, at lengths around its 8-wide blocks.
TEST(Sampler, GreedyEqualsTheScalarScan) {
  const auto scan = [](const std::vector<float>& l) {
    std::int32_t best = 0;
    for (std::size_t i = 1; i < l.size(); ++i)
      if (l[i] > l[static_cast<std::size_t>(best)]) best = static_cast<std::int32_t>(i);
    return best;
  };
  std::mt19937 rng(7);
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), 1.0f};
  for (int trial = 0; trial < 3000; ++trial) {
    const std::size_t n = 1 + rng() % 40;
    std::vector<float> l(n);
    for (auto& x : l) x = rng() % 3 == 0 ? specials[rng() % 6] : static_cast<float>(static_cast<int>(rng() % 7) - 3);
    ASSERT_EQ(greedy_token(l), scan(l)) << "trial " << trial;
  }
  const auto big = random_logits(49152, 3);
  EXPECT_EQ(greedy_token(big), scan(big));
}

// Each sampled token is the keyed Gumbel-max of its (filtered, scaled) logits row, recomputed here
// independently from the definition.
TEST(Sampler, SampledTokenIsTheKeyedGumbelMax) {
  for (int trial = 0; trial < 50; ++trial) {
    auto logits = random_logits(1000, static_cast<std::uint32_t>(trial));
    SamplingParams p;
    p.temperature = 0.5f + 0.1f * static_cast<float>(trial % 10);
    const std::uint64_t seed = 1234 + static_cast<std::uint64_t>(trial);
    const std::int64_t pos = 17 * trial;
    std::int32_t want = -1;
    double best = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < logits.size(); ++i) {
      const double s = static_cast<double>(logits[i] / p.temperature) +
                       gumbel_noise(seed, pos, static_cast<std::int32_t>(i));
      if (s > best) best = s, want = static_cast<std::int32_t>(i);
    }
    EXPECT_EQ(sample_token(logits, p, seed, pos), want);
  }
}

TEST(Sampler, FollowsTheSoftmaxDistribution) {
  // Over many positions the keyed noise must sample token i with probability softmax(l)_i.
  std::vector<float> l = {0.0f, 1.0f, 2.0f};
  SamplingParams p;
  std::map<int, int> count;
  const int n = 60000;
  for (int pos = 0; pos < n; ++pos) ++count[sample_token(l, p, 99, pos)];
  const double z = 1 + std::exp(1.0) + std::exp(2.0);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(count[i] / static_cast<double>(n), std::exp(static_cast<double>(i)) / z, 0.01);
}

TEST(Sampler, FiltersApplyInOrder) {
  std::vector<float> l = {5.0f, 4.0f, 3.0f, 2.0f, 1.0f};
  SamplingParams p;
  p.top_k = 3;
  auto c = filtered_candidates(l, p);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].first, 0);
  EXPECT_EQ(c[2].first, 2);
  p.top_k = 0;
  p.top_p = 0.5f;  // softmax of 5,4,3,2,1: 0.636 alone already reaches 0.5
  EXPECT_EQ(filtered_candidates(l, p).size(), 1u);
  p.top_p = 0.9f;  // 0.636 + 0.234 = 0.870 < 0.9, + 0.086 = 0.956
  EXPECT_EQ(filtered_candidates(l, p).size(), 3u);
  p.top_p = 1.0f;
  p.min_p = 0.3f;  // e^-1 = 0.37 stays, e^-2 = 0.135 goes
  EXPECT_EQ(filtered_candidates(l, p).size(), 2u);
  // Never sampled outside the kept set.
  p.min_p = 0.0f;
  p.top_k = 2;
  for (int pos = 0; pos < 500; ++pos) EXPECT_LT(sample_token(l, p, 5, pos), 2);
}

// The reference: log-softmax in long double over the candidates a sampler would keep.
TEST(Sampler, TokenLogprobIsTheLogSoftmaxOfTheFilteredScaledLogits) {
  const auto l = random_logits(500, 11);
  for (const auto& [t, k, pp] : std::vector<std::tuple<float, int, float>>{
           {1.0f, 0, 1.0f}, {0.7f, 40, 1.0f}, {1.3f, 0, 0.9f}, {0.5f, 10, 0.8f}}) {
    SamplingParams p;
    p.temperature = t;
    p.top_k = k;
    p.top_p = pp;
    const auto c = filtered_candidates(l, p);
    long double z = 0;
    for (const auto& [id, v] : c) z += std::exp(static_cast<long double>(v));
    const auto token = sample_token(l, p, 3, 17);
    const auto r = token_logprob(l, p, token, 20);
    EXPECT_EQ(r.token, token);
    const auto want = [&](std::int32_t id) {
      for (const auto& [cid, v] : c)
        if (cid == id) return static_cast<double>(static_cast<long double>(v) - std::log(z));
      return -std::numeric_limits<double>::infinity();
    };
    EXPECT_NEAR(r.logprob, want(token), 1e-5);
    ASSERT_EQ(r.top.size(), std::min<std::size_t>(20, c.size()));
    for (std::size_t i = 0; i < r.top.size(); ++i) {
      EXPECT_NEAR(r.top[i].second, want(r.top[i].first), 1e-5);
      if (i > 0) {
        EXPECT_GE(r.top[i - 1].second, r.top[i].second);
      }
    }
    // A token the filters removed has no probability.
    if (c.size() < l.size()) {
      std::int32_t out = 0;
      while (want(out) != -std::numeric_limits<double>::infinity()) ++out;
      EXPECT_EQ(token_logprob(l, p, out, 0).logprob, -std::numeric_limits<float>::infinity());
    }
  }
  // Greedy: the whole row's log-softmax at temperature 1, the chosen token the best.
  SamplingParams g;
  g.temperature = 0.0f;
  const auto r = token_logprob(l, g, greedy_token(l), 3);
  long double z = 0;
  for (float v : l) z += std::exp(static_cast<long double>(v));
  EXPECT_NEAR(r.logprob, static_cast<double>(l[static_cast<std::size_t>(greedy_token(l))] - std::log(z)), 1e-5);
  ASSERT_EQ(r.top.size(), 3u);
  EXPECT_EQ(r.top[0].first, greedy_token(l));
  EXPECT_EQ(r.top[0].second, r.logprob);
}

TEST(Sampler, ChoiceSeeds) {
  EXPECT_EQ(choice_seed(77, 0), 77u);
  EXPECT_EQ(choice_seed(77, 1), mix64(77 + 0x9e3779b97f4a7c15ull));
  EXPECT_NE(choice_seed(77, 1), choice_seed(77, 2));
  EXPECT_NE(choice_seed(77, 1), choice_seed(78, 1));
}

TEST(LogitAdjust, PenaltiesAndBiasAsDefined) {
  std::vector<float> row = {1.0f, -1.0f, 2.0f, 0.5f, 3.0f};
  LogitAdjustments a;
  a.repetition_penalty = 2.0f;  // prompt {0, 1}, generated {2, 2, 3}
  a.frequency_penalty = 0.25f;
  a.presence_penalty = 0.5f;
  a.bias = {{4, -100.0f}, {1, 1.0f}};
  const std::vector<std::int32_t> prompt = {0, 1}, generated = {2, 2, 3};
  adjust_logits(a, prompt, generated, row);
  EXPECT_FLOAT_EQ(row[0], 0.5f);                     // 1 / 2
  EXPECT_FLOAT_EQ(row[1], -2.0f + 1.0f);             // -1 * 2, then the bias
  EXPECT_FLOAT_EQ(row[2], 1.0f - 2 * 0.25f - 0.5f);  // 2 / 2, twice generated
  EXPECT_FLOAT_EQ(row[3], 0.25f - 0.25f - 0.5f);     // 0.5 / 2, once
  EXPECT_FLOAT_EQ(row[4], 3.0f - 100.0f);            // never seen: only the bias
  EXPECT_FALSE(LogitAdjustments{}.active());
  EXPECT_TRUE(a.active());
}

TEST(Sampler, SeedFromPromptDependsOnEveryToken) {
  std::vector<std::int32_t> a = {1, 2, 3}, b = {1, 2, 4}, c = {1, 2};
  EXPECT_EQ(seed_from_prompt(a), seed_from_prompt(a));
  EXPECT_NE(seed_from_prompt(a), seed_from_prompt(b));
  EXPECT_NE(seed_from_prompt(a), seed_from_prompt(c));
}

}  // namespace
}  // namespace tf
