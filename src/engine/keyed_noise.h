#pragma once
// Counter-based sampling noise and the sampler's portable arithmetic (ARCHITECTURE §4): the Gumbel noise for
// token `t` at absolute position `p` is a pure function of (seed, p, t), and the weights the filters use are
// a pure function of the scaled logits. Everything here is integer hashing and IEEE double +, *, / written
// out step by step, each rounded on its own (the host builds with -ffp-contract=off; on the device every
// operation is an explicitly rounded intrinsic, so nvcc fuses nothing), so the CUDA sampler (sample.cu)
// includes this very file and gets the same bits; no libm call whose last bit could differ between
// platforms.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TF_HD __host__ __device__
#else
#define TF_HD
#endif

namespace tf {
namespace exact {

TF_HD inline double add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
TF_HD inline double sub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
TF_HD inline double mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
TF_HD inline double div(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
TF_HD inline std::uint64_t bits_of(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
#endif
}
TF_HD inline double double_of(std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(b));
#else
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
#endif
}

}  // namespace exact

TF_HD inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The part of a noise key that depends on (seed, position) only: one per row, not one per token.
TF_HD inline std::uint64_t row_key(std::uint64_t seed, std::int64_t position) {
  return mix64(mix64(seed) ^ static_cast<std::uint64_t>(position));
}
TF_HD inline std::uint64_t noise_key(std::uint64_t seed, std::int64_t position, std::int32_t token) {
  return mix64(row_key(seed, position) ^ static_cast<std::uint32_t>(token));
}

// A uniform double in (0, 1): 52 random bits plus a half step, so neither 0 nor 1 can occur (with 53 bits
// the largest value would round up to exactly 1).
TF_HD inline double key_to_unit(std::uint64_t key) {
  return exact::mul(exact::add(static_cast<double>(key >> 12), 0.5), 1.0 / 4503599627370496.0);
}

// Natural log of a positive, finite, normal double: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), then
// log(m) = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.1716, by its odd series to s^29 in Horner form (one
// division; the truncation error is below 1e-20, the result within 2 ulp of the true log).
TF_HD inline double portable_log(double x) {
  std::uint64_t bits = exact::bits_of(x);
  auto e = static_cast<std::int64_t>((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;  // m in [1, 2)
  double m = exact::double_of(bits);
  if (m > 1.4142135623730951) {
    m = exact::mul(m, 0.5);
    e += 1;
  }
  const double s = exact::div(exact::sub(m, 1.0), exact::add(m, 1.0));
  const double s2 = exact::mul(s, s);
  // 1 + s2/3 + s2^2/5 + ... + s2^14/29, from the innermost term out.
  double p = 1.0 / 29.0;
  p = exact::add(exact::mul(p, s2), 1.0 / 27.0);
  p = exact::add(exact::mul(p, s2), 1.0 / 25.0);
  p = exact::add(exact::mul(p, s2), 1.0 / 23.0);
  p = exact::add(exact::mul(p, s2), 1.0 / 21.0);
  p = exact::add(exact::mul(p, s2), 1.0 / 19.0);
  p = exact::add(exact::mul(p, s2), 1.0 / 17.0);
  p = exact::add(exact::mul(p, s2), 1.0 / 15.0);
  p = exact::add(exact::mul(p, s2), 1.0 / 13.0);
  p = exact::add(exact::mul(p, s2), 1.0 / 11.0);
  p = exact::add(exact::mul(p, s2), 1.0 / 9.0);
  p = exact::add(exact::mul(p, s2), 1.0 / 7.0);
  p = exact::add(exact::mul(p, s2), 1.0 / 5.0);
  p = exact::add(exact::mul(p, s2), 1.0 / 3.0);
  const double atanh_s = exact::add(s, exact::mul(exact::mul(s, s2), p));
  return exact::add(exact::mul(2.0, atanh_s), exact::mul(static_cast<double>(e), 0.6931471805599453));
}

// e^x for x <= 0 (the sampler's weights exp(v - max)); 0 below -708 (where e^x is subnormal or 0): the
// argument reduced by k = round(x / ln 2) with ln 2 in two parts (Cody-Waite), e^r (|r| <= 0.35) by its
// Taylor series to r^13 in Horner form, then scaled by 2^k through the exponent bits. Within 2 ulp of e^x.
TF_HD inline double portable_exp(double x) {
  if (!(x > -708.0)) return 0.0;  // also NaN
  if (x > 0.0) x = 0.0;
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer, ties to even
  const double kd = exact::sub(exact::add(exact::mul(x, 1.4426950408889634), kRound), kRound);
  const double r = exact::sub(exact::sub(x, exact::mul(kd, 0.693147180369123816490)),
                              exact::mul(kd, 1.90821492927058770002e-10));
  double p = 1.0 / 6227020800.0;  // 1/13!
  p = exact::add(exact::mul(p, r), 1.0 / 479001600.0);
  p = exact::add(exact::mul(p, r), 1.0 / 39916800.0);
  p = exact::add(exact::mul(p, r), 1.0 / 3628800.0);
  p = exact::add(exact::mul(p, r), 1.0 / 362880.0);
  p = exact::add(exact::mul(p, r), 1.0 / 40320.0);
  p = exact::add(exact::mul(p, r), 1.0 / 5040.0);
  p = exact::add(exact::mul(p, r), 1.0 / 720.0);
  p = exact::add(exact::mul(p, r), 1.0 / 120.0);
  p = exact::add(exact::mul(p, r), 1.0 / 24.0);
  p = exact::add(exact::mul(p, r), 1.0 / 6.0);
  p = exact::add(exact::mul(p, r), 0.5);
  p = exact::add(exact::mul(p, r), 1.0);
  p = exact::add(exact::mul(p, r), 1.0);
  const auto k = static_cast<std::int64_t>(kd);  // in [-1022, 0]
  return exact::double_of(exact::bits_of(p) + (static_cast<std::uint64_t>(k) << 52));
}

// Standard Gumbel noise -log(-log(u)).
TF_HD inline double gumbel_of_key(std::uint64_t key) {
  const double u = key_to_unit(key);
  return -portable_log(-portable_log(u));
}
TF_HD inline double gumbel_noise(std::uint64_t seed, std::int64_t position, std::int32_t token) {
  return gumbel_of_key(noise_key(seed, position, token));
}

}  // namespace tf
