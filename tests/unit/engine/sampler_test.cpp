#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include <tuple>
#include "engine/keyed_noise.h"
#include "engine/logit_adjust.h"
#include "engine/sampler_weights.h"
#include "engine/sampling_math.h"

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

TEST(KeyedNoise, PortableExpMatchesLibmClosely) {
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> d(-707.0, 0.0);
  for (int i = 0; i < 200000; ++i) {
    const double x = i % 2 ? d(rng) : d(rng) / 20.0;
    ASSERT_NEAR(portable_exp(x), std::exp(x), 4e-16 * std::exp(x)) << x;
  }
  EXPECT_EQ(portable_exp(0.0), 1.0);
  EXPECT_EQ(portable_exp(-0.0), 1.0);
  EXPECT_EQ(portable_exp(-800.0), 0.0);
  EXPECT_EQ(portable_exp(-std::numeric_limits<double>::infinity()), 0.0);
  EXPECT_EQ(portable_exp(std::numeric_limits<double>::quiet_NaN()), 0.0);
  // Massless beyond the gap, as sampling_math.h relies on.
  EXPECT_EQ(sampling::mass_of_weight(portable_exp(-sampling::kMasslessGap)), 0u);
}

// The vector path of the row weights gives the scalar definition's bits.
TEST(KeyedNoise, RowWeightsVectorPathEqualsScalar) {
  auto v = random_logits(10007, 5, 8.0f);
  v[3] = std::numeric_limits<float>::quiet_NaN();
  v[4] = -std::numeric_limits<float>::infinity();
  v[5] = -0.0f;
  v[6] = 0.0f;
  const float mx = 30.0f;
  v[7] = mx;
  std::vector<double> a(v.size()), b(v.size());
  row_weights(v.data(), v.size(), mx, a.data());
  row_weights_scalar(v.data(), v.size(), mx, b.data());
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(double)), 0) << i << " " << v[i];
  EXPECT_EQ(a[7], 1.0);
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

// The definition of sampling_math.h written out plainly: sort every candidate, cut, Gumbel-max over all kept.
std::pair<std::vector<std::pair<std::int32_t, float>>, std::int32_t> reference_sample(const std::vector<float>& l,
                                                                                      const SamplingParams& p,
                                                                                      std::uint64_t seed,
                                                                                      std::int64_t pos) {
  std::vector<std::pair<std::int32_t, float>> c;
  for (std::size_t i = 0; i < l.size(); ++i) {
    const float v = l[i] / p.temperature;
    if (!std::isnan(v)) c.emplace_back(static_cast<std::int32_t>(i), v);
  }
  if (c.empty()) return {c, 0};
  std::sort(c.begin(), c.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (p.top_k > 0 && static_cast<std::size_t>(p.top_k) < c.size()) c.resize(static_cast<std::size_t>(p.top_k));
  const float mx = c[0].second;
  const auto first = c[0];
  if (p.top_p < 1.0f) {
    std::uint64_t total = 0, prefix = 0;
    for (const auto& x : c) total += sampling::mass_of_weight(portable_exp(double(x.second) - double(mx)));
    for (std::size_t i = 0; i < c.size(); ++i) {
      prefix += sampling::mass_of_weight(portable_exp(double(c[i].second) - double(mx)));
      if (double(prefix) >= double(p.top_p) * double(total)) {
        c.resize(i + 1);
        break;
      }
    }
  }
  if (p.min_p > 0.0f) {
    std::vector<std::pair<std::int32_t, float>> kept;
    for (const auto& x : c)
      if (portable_exp(double(x.second) - double(mx)) >= double(p.min_p)) kept.push_back(x);
    if (kept.empty()) kept.push_back(first);
    c = kept;
  }
  std::int32_t best = -1;
  double best_score = 0;
  for (const auto& [id, v] : c) {
    const double s = double(v) + gumbel_noise(seed, pos, id);
    if (best < 0 || s > best_score || (s == best_score && id < best)) best_score = s, best = id;
  }
  return {c, best};
}

// The fast sampler (bins instead of a sort, logs skipped where a score cannot win) against the plain
// definition: the same kept set and the same token, over rows with ties, NaNs, infinities and signed zeros,
// at the settings clients send.
TEST(Sampler, FastPathEqualsThePlainDefinition) {
  struct P {
    float t;
    int k;
    float p, minp;
  };
  const std::vector<P> params = {{1.0f, 0, 1.0f, 0.0f},  {0.8f, 0, 0.95f, 0.0f}, {0.7f, 40, 1.0f, 0.0f},
                                 {1.0f, 0, 1.0f, 0.05f}, {0.6f, 20, 0.9f, 0.02f}, {1.5f, 0, 0.5f, 0.0f},
                                 {0.9f, 0, 0.8f, 0.1f},  {2.0f, 1, 1.0f, 0.0f},   {0.3f, 0, 0.999f, 0.0f},
                                 {1.0f, 0, 0.95f, 1e-14f}};
  std::mt19937 rng(11);
  int draws = 0;
  for (int trial = 0; trial < 44; ++trial) {
    const std::size_t n = trial % 6 == 0 ? 49152 : 1 + rng() % 3000;
    auto l = random_logits(n, static_cast<std::uint32_t>(100 + trial), trial % 2 ? 3.0f : 9.0f);
    for (int i = 0; i < 12; ++i) l[rng() % n] = 12.0f + static_cast<float>(i % 3);  // ties at the top
    if (trial % 4 == 1) l[rng() % n] = std::numeric_limits<float>::quiet_NaN();
    if (trial % 5 == 2) l[rng() % n] = -std::numeric_limits<float>::infinity();
    if (trial % 7 == 3)
      for (auto& x : l) x = rng() % 2 ? 0.0f : -0.0f;  // every value a zero of either sign
    if (trial % 11 == 4)
      for (auto& x : l) x = static_cast<float>(static_cast<int>(rng() % 5));  // heavy ties everywhere
    for (const auto& q : params) {
      SamplingParams p;
      p.temperature = q.t;
      p.top_k = q.k;
      p.top_p = q.p;
      p.min_p = q.minp;
      const std::uint64_t seed = rng();
      const std::int64_t pos = rng() % 100000;
      const auto [kept, want] = reference_sample(l, p, seed, pos);
      ASSERT_EQ(filtered_candidates(l, p), kept) << "trial " << trial << " T " << q.t << " p " << q.p;
      ASSERT_EQ(sample_token(l, p, seed, pos), want) << "trial " << trial << " T " << q.t << " p " << q.p;
      ++draws;
    }
  }
  std::printf("[ sampler ] %d draws equal to the plain definition\n", draws);
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
