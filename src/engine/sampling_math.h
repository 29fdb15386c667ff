#pragma once
// The arithmetic of the one sampling function (sampler.h), shared by the host sampler (sampler.cpp) and the
// CUDA sampler (kernels/sample.cu), so the two choose the same token from the same logits, bit for bit:
//
//   v_i = logit_i / T (float division); NaN rows drop out. Candidates are ordered by (v descending, id
//   ascending), -0 equal to +0.
//   top-k keeps the first k candidates.
//   Weights w_i = portable_exp(double(v_i) - double(v_max)) (keyed_noise.h: the same bits everywhere), and
//   masses m_i = floor(w_i * 2^43), integers: their sums are exact in any order, so a GPU block and a host
//   loop get the same total Q (over the candidates top-k kept) and the same running sums. 2^43 keeps the sum
//   of up to 2^21 masses inside 64 bits; a weight below 2^-43 (v more than ~30 below the max, at T = 1 a
//   probability under 1e-13 of the top token's) has no mass.
//   top-p keeps the shortest prefix whose mass M has double(M) >= double(top_p) * double(Q) (the first
//   candidate always has mass 2^43, so the prefix is never empty).
//   min-p keeps the candidates with w_i >= min_p (the first one has w = 1); none kept keeps the first.
//   Then Gumbel-max: the largest double(v_i) + gumbel(seed, position, id), equal scores to the lower id.
#include <cstdint>

#include "engine/keyed_noise.h"

namespace tf::sampling {

constexpr int kMassBits = 43;
constexpr double kMassScale = 8796093022208.0;  // 2^43
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 21;
// Below this many nats under the max a weight is under 2^-43 and its mass is 0: portable_exp(-30) = 9.36e-14
// and 9.36e-14 * 2^43 = 0.82. Lets a sampler skip the exp of a candidate whose mass is all it needs.
constexpr double kMasslessGap = 30.0;
constexpr double kLn2 = 0.6931471805599453;

TF_HD inline double weight(float v, float v_max) {
  return portable_exp(exact::sub(static_cast<double>(v), static_cast<double>(v_max)));
}
TF_HD inline std::uint64_t mass_of_weight(double w) { return static_cast<std::uint64_t>(exact::mul(w, kMassScale)); }
TF_HD inline std::uint64_t mass(float v, float v_max) {
  if (exact::sub(static_cast<double>(v_max), static_cast<double>(v)) > kMasslessGap) return 0;
  return mass_of_weight(weight(v, v_max));
}

TF_HD inline double to_double(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __ull2double_rn(x);
#else
  return static_cast<double>(x);
#endif
}
// Whether a prefix of mass `prefix` is top-p's: double(prefix) >= double(top_p) * double(total).
TF_HD inline bool top_p_reached(std::uint64_t prefix, std::uint64_t total, float top_p) {
  return to_double(prefix) >= exact::mul(static_cast<double>(top_p), to_double(total));
}

// A candidate's Gumbel-max score.
TF_HD inline double score(float v, std::uint64_t row_key_value, std::int32_t id) {
  return exact::add(static_cast<double>(v), gumbel_of_key(mix64(row_key_value ^ static_cast<std::uint32_t>(id))));
}

// Whether a candidate with scaled logit v and noise key `key` cannot reach `best`, another candidate's score,
// found without the two logs of its own score. The score is v - log(E), E = -log(u) >= 1 - u = z, so it is
// at most v - log(z) <= v - e ln 2, where 2^e <= z is read off z's bits. A candidate whose bound lies more
// than ln 2 under `best` is beaten by more than any rounding of the computed scores (~1e-13), so dropping it
// never changes the argmax or a tie.
TF_HD inline bool cannot_win(float v, std::uint64_t key, double best) {
  // u = (k + 1/2) / 2^52 with k = key >> 12, so z = 1 - u = (2^53 - 2k - 1) / 2^53, exactly.
  const std::uint64_t num = (std::uint64_t{1} << 53) - 2 * (key >> 12) - 1;  // >= 1
#if defined(__CUDA_ARCH__)
  const int top_bit = 63 - __clzll(static_cast<long long>(num));
#else
  const int top_bit = 63 - __builtin_clzll(num);
#endif
  const int e = top_bit - 53;  // 2^e <= z < 2^(e+1)
  return static_cast<double>(v) < exact::add(best, exact::mul(static_cast<double>(e - 1), kLn2));
}

// The key a sort orders candidates by, descending: (v, then the lower id) in one unsigned integer; -0 as +0.
TF_HD inline std::uint64_t order_key(float v, std::int32_t id) {
  if (v == 0.0f) v = 0.0f;
  std::uint32_t u;
#if defined(__CUDA_ARCH__)
  u = __float_as_uint(v);
#else
  std::memcpy(&u, &v, sizeof u);
#endif
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<std::uint64_t>(u) << 32) | (0xFFFFFFFFu - static_cast<std::uint32_t>(id));
}
TF_HD inline std::int32_t id_of_key(std::uint64_t key) {
  return static_cast<std::int32_t>(0xFFFFFFFFu - static_cast<std::uint32_t>(key & 0xFFFFFFFFu));
}

}  // namespace tf::sampling
