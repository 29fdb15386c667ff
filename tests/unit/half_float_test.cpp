#include "checkpoint/half_float.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace tf {
namespace {

// f16 -> f32 must be exact; compare against the value computed from the bit fields in double.
double f16_reference(std::uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  if (exp == 0) return sign * std::ldexp(static_cast<double>(mant), -24);
  if (exp == 31) return mant ? NAN : static_cast<double>(sign) * INFINITY;
  return sign * std::ldexp(static_cast<double>(1024 + mant), exp - 25);
}

TEST(HalfFloat, F16ToF32IsExactForEveryBitPattern) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<std::uint16_t>(h));
    const double ref = f16_reference(static_cast<std::uint16_t>(h));
    if (std::isnan(ref)) {
      EXPECT_TRUE(std::isnan(f)) << h;
    } else {
      EXPECT_EQ(static_cast<double>(f), ref) << h;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << h;
    }
  }
}

TEST(HalfFloat, F16RoundTripsEveryNonNanPattern) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    if ((bits & 0x7c00) == 0x7c00 && (bits & 0x3ff) != 0) continue;  // nan
    EXPECT_EQ(f32_to_f16(f16_to_f32(bits)), bits) << h;
  }
}

// Round-to-nearest-even checked against the neighbouring half values, in double.
TEST(HalfFloat, F32ToF16RoundsToNearestEven) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> any;
  for (int i = 0; i < 2000000; ++i) {
    std::uint32_t bits = any(rng);
    // concentrate on the half range (|x| < 2^17) so most samples are interesting
    bits = (bits & 0x807fffffu) | ((100u + (bits >> 23) % 48u) << 23);
    float x;
    std::memcpy(&x, &bits, 4);
    const std::uint16_t h = f32_to_f16(x);
    const double got = f16_reference(h);
    const double xd = x;
    if (std::isinf(got)) {
      EXPECT_GE(std::fabs(xd), 65520.0) << x;
      continue;
    }
    // neighbours of h in the direction of x
    const std::uint16_t up = static_cast<std::uint16_t>(h + 1), down = static_cast<std::uint16_t>(h - 1);
    const double err = std::fabs(got - xd);
    for (std::uint16_t n : {up, down}) {
      if ((n & 0x7fff) >= 0x7c00 || ((n ^ h) & 0x8000)) continue;
      const double other = std::fabs(f16_reference(n) - xd);
      EXPECT_LE(err, other) << x;
      if (err == other) {
        EXPECT_EQ(h & 1, 0) << "tie not to even for " << x;
      }
    }
  }
}

TEST(HalfFloat, F32ToF16Edges) {
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // halfway to the next binade rounds to inf
  EXPECT_EQ(f32_to_f16(-INFINITY), 0xfc00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);   // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);   // exactly half of it: tie to even (0)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(NAN) & 0x7e00, 0x7e00);
}

TEST(HalfFloat, Bf16RoundsToNearestEvenAndKeepsNan) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even (1.0)
  EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.01171875f), 0x3f82);  // halfway between 0x3f81 and 0x3f82: to even
  EXPECT_EQ(f32_to_bf16(1.005f), 0x3f81);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    if ((bits & 0x7f80) == 0x7f80 && (bits & 0x7f) != 0) continue;
    EXPECT_EQ(f32_to_bf16(bf16_to_f32(bits)), bits);
  }
}

}  // namespace
}  // namespace tf
