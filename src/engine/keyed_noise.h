#pragma once
// Counter-based sampling noise (ARCHITECTURE §4): the Gumbel noise for token `t` at absolute position `p`
// is a pure function of (seed, p, t). Everything here is integer hashing and IEEE double +, *, / written out
// step by step (the project builds with -ffp-contract=off), so a CUDA port doing the same operations in the
// same order gets the same bits; no libm call whose last bit could differ between platforms.
#include <bit>
#include <cstdint>

namespace tf {

inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline std::uint64_t noise_key(std::uint64_t seed, std::int64_t position, std::int32_t token) {
  return mix64(mix64(mix64(seed) ^ static_cast<std::uint64_t>(position)) ^ static_cast<std::uint32_t>(token));
}

// A uniform double in (0, 1): 52 random bits plus a half step, so neither 0 nor 1 can occur (with 53 bits
// the largest value would round up to exactly 1).
inline double key_to_unit(std::uint64_t key) {
  return (static_cast<double>(key >> 12) + 0.5) * (1.0 / 4503599627370496.0);
}

// Natural log of a positive, finite, normal double: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), then
// log(m) = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.1716, by its series to s^29 (error below 1e-16).
inline double portable_log(double x) {
  std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
  auto e = static_cast<std::int64_t>((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;  // m in [1, 2)
  double m = std::bit_cast<double>(bits);
  if (m > 1.4142135623730951) {
    m = m * 0.5;
    e += 1;
  }
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double term = s, sum = 0.0;
  for (int k = 1; k <= 29; k += 2) {
    sum = sum + term / static_cast<double>(k);
    term = term * s2;
  }
  return 2.0 * sum + static_cast<double>(e) * 0.6931471805599453;
}

// Standard Gumbel noise -log(-log(u)).
inline double gumbel_noise(std::uint64_t seed, std::int64_t position, std::int32_t token) {
  const double u = key_to_unit(noise_key(seed, position, token));
  return -portable_log(-portable_log(u));
}

}  // namespace tf
