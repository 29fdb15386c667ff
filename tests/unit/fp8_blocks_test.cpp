// Block-scaled FP8 (checkpoint/fp8_blocks.h): every E4M3 code's value against the format's definition (sign,
// 4-bit exponent of bias 7, 3-bit mantissa, subnormals, 0x7F / 0xFF NaN, no infinities), and a matrix whose
// blocks do not divide it dequantized with each block's own scale, as one float32 product a value.
#include "checkpoint/fp8_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tf {
namespace {

TEST(Fp8Blocks, E4m3Codes) {
  EXPECT_EQ(e4m3_value(0x00), 0.0f);
  EXPECT_TRUE(std::signbit(e4m3_value(0x80)));
  EXPECT_EQ(e4m3_value(0x38), 1.0f);
  EXPECT_EQ(e4m3_value(0x7E), 448.0f);
  EXPECT_EQ(e4m3_value(0xFE), -448.0f);
  EXPECT_EQ(e4m3_value(0x01), std::ldexp(1.0f, -9));  // the smallest subnormal
  EXPECT_EQ(e4m3_value(0x08), std::ldexp(1.0f, -6));  // the smallest normal
  EXPECT_TRUE(std::isnan(e4m3_value(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3_value(0xFF)));
  for (int c = 0; c < 256; ++c) {
    const int e = (c >> 3) & 15, m = c & 7;
    if (e == 15 && m == 7) continue;
    const double want =
        (c & 0x80 ? -1.0 : 1.0) * (e == 0 ? m / 8.0 * std::pow(2.0, -6) : (1 + m / 8.0) * std::pow(2.0, e - 7));
    EXPECT_EQ(double(e4m3_value(static_cast<std::uint8_t>(c))), want) << "code " << c;
  }
}

TEST(Fp8Blocks, EachBlockItsOwnScale) {
  // 3 x 5 in blocks of 2 x 2: scales [2, 3]; the last block row and column are partial.
  const std::vector<std::uint8_t> codes(15, 0x38);  // every code 1.0
  const std::vector<float> scales = {0.5f, 2.0f, 3.0f, -1.0f, 0.25f, 1e-3f};
  const auto w = dequantize_fp8_blocks(codes, 3, 5, scales, 2, 2);
  ASSERT_EQ(w.size(), 15u);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 5; ++c)
      EXPECT_EQ(w[static_cast<std::size_t>(r * 5 + c)], scales[static_cast<std::size_t>((r / 2) * 3 + c / 2)]);
  const std::vector<std::uint8_t> one = {0x3D};  // 1.625
  EXPECT_EQ(dequantize_fp8_blocks(one, 1, 1, std::vector<float>{0.1f}, 128, 128)[0], 1.625f * 0.1f);
}

TEST(Fp8Blocks, Ue8m0ScalesAndMxfp4) {
  EXPECT_EQ(e8m0_value(127), 1.0f);
  EXPECT_EQ(e8m0_value(120), std::ldexp(1.0f, -7));
  EXPECT_EQ(e8m0_value(0), std::ldexp(1.0f, -127));
  // One row of 64 inputs: two scale groups (2^-1 and 2^3); byte j holds inputs 2j (low nibble) and 2j + 1.
  std::vector<std::uint8_t> packed(32);
  for (int j = 0; j < 32; ++j)
    packed[static_cast<std::size_t>(j)] = static_cast<std::uint8_t>((j % 16) | ((15 - j % 16) << 4));
  const std::vector<std::uint8_t> scales = {126, 130};
  const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  const auto v = dequantize_mxfp4(packed, 1, 64, scales);
  for (int c = 0; c < 64; ++c) {
    const int j = c / 2, code = c % 2 == 0 ? j % 16 : 15 - j % 16;
    EXPECT_EQ(v[static_cast<std::size_t>(c)], e2m1[code] * (c < 32 ? 0.5f : 8.0f)) << "input " << c;
  }
}

}  // namespace
}  // namespace tf
