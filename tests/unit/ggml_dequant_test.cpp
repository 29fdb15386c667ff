#include "checkpoint/ggml_dequant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "byte_builder.h"
#include "checkpoint/half_float.h"

// Hand-computed blocks. The bit-for-bit comparison with the gguf package on real and random blocks is
// in tests/conformance/test_gguf_dequant.py.

namespace tf {
namespace {

using test::ByteBuilder;

TEST(GgmlDequant, Q4_0HalvesAndOffset) {
  ByteBuilder b;
  b.put<std::uint16_t>(f32_to_f16(0.5f));
  for (int j = 0; j < 16; ++j) b.put<std::uint8_t>(static_cast<std::uint8_t>((15 - j) << 4 | j));
  std::vector<float> y(32);
  dequantize_ggml(GgmlType::Q4_0, b.bytes(), y);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * static_cast<float>(j - 8));  // low nibbles: elements 0..15
    EXPECT_EQ(y[16 + j], 0.5f * static_cast<float>(15 - j - 8));  // high nibbles: 16..31
  }
}

TEST(GgmlDequant, Q4_1AddsMin) {
  ByteBuilder b;
  b.put<std::uint16_t>(f32_to_f16(0.25f)).put<std::uint16_t>(f32_to_f16(-1.0f));
  for (int j = 0; j < 16; ++j) b.put<std::uint8_t>(0xf3);
  std::vector<float> y(32);
  dequantize_ggml(GgmlType::Q4_1, b.bytes(), y);
  EXPECT_EQ(y[0], 0.25f * 3 - 1.0f);
  EXPECT_EQ(y[31], 0.25f * 15 - 1.0f);
}

TEST(GgmlDequant, Q8_0Signed) {
  ByteBuilder b;
  b.put<std::uint16_t>(f32_to_f16(2.0f));
  for (int j = 0; j < 32; ++j) b.put<std::int8_t>(static_cast<std::int8_t>(j - 16));
  std::vector<float> y(32);
  dequantize_ggml(GgmlType::Q8_0, b.bytes(), y);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 2.0f * static_cast<float>(j - 16));
}

TEST(GgmlDequant, Q4_KScalesAndMins) {
  ByteBuilder b;
  b.put<std::uint16_t>(f32_to_f16(1.0f)).put<std::uint16_t>(f32_to_f16(0.5f));
  // sub-block j (< 4): scale = s[j] & 63, min = s[j+4] & 63; j >= 4 takes 4 low bits from s[j+4] and 2 high
  // bits from the top of s[j-4] / s[j].
  const std::uint8_t s[12] = {1, 2, 3, 4 | 0x40, 5, 6, 7, 8, 0x21, 0x32, 0x43, 0x54};
  for (auto v : s) b.put<std::uint8_t>(v);
  for (int i = 0; i < 128; ++i) b.put<std::uint8_t>(0x21);  // low nibble 1, high nibble 2
  std::vector<float> y(256);
  dequantize_ggml(GgmlType::Q4_K, b.bytes(), y);
  EXPECT_EQ(y[0], 1.0f * 1 * 1 - 0.5f * 5);    // sub-block 0: q = low nibble
  EXPECT_EQ(y[32], 1.0f * 2 * 2 - 0.5f * 6);   // sub-block 1: q = high nibble
  // sub-block 7: scale = (s[11] & 15) | (s[3] >> 6) << 4 = 4 | 16 = 20; min = (s[11] >> 4) | (s[7] >> 6) << 4 = 5
  EXPECT_EQ(y[255], 1.0f * 20 * 2 - 0.5f * 5);
}

TEST(GgmlDequant, Q6_KLayout) {
  ByteBuilder b;
  for (int i = 0; i < 128; ++i) b.put<std::uint8_t>(static_cast<std::uint8_t>(i < 32 ? 0x5a : 0));  // ql
  for (int i = 0; i < 64; ++i) b.put<std::uint8_t>(static_cast<std::uint8_t>(i == 0 ? 0xe4 : 0));  // qh
  for (int i = 0; i < 16; ++i) b.put<std::int8_t>(static_cast<std::int8_t>(i - 8));  // scales
  b.put<std::uint16_t>(f32_to_f16(0.125f));
  std::vector<float> y(256);
  dequantize_ggml(GgmlType::Q6_K, b.bytes(), y);
  // element 0: low nibble of ql[0] (0xa) | (qh[0] bits 0-1 = 0) << 4 -> 10 - 32, scale group 0 (-8)
  EXPECT_EQ(y[0], (0.125f * -8.0f) * static_cast<float>(10 - 32));
  // element 64: high nibble of ql[0] (5) | (qh[0] bits 4-5 = 2) << 4 = 37 -> 5, group 4 (-4)
  EXPECT_EQ(y[64], (0.125f * -4.0f) * static_cast<float>(37 - 32));
  // element 96: high nibble of ql[32] (0) | (qh[0] bits 6-7 = 3) << 4 = 48 -> 16, group 6 (-2)
  EXPECT_EQ(y[96], (0.125f * -2.0f) * static_cast<float>(48 - 32));
}

TEST(GgmlDequant, FloatTypes) {
  ByteBuilder b;
  b.put<std::uint16_t>(f32_to_f16(-3.5f)).put<std::uint16_t>(0x7c00);
  std::vector<float> y(2);
  dequantize_ggml(GgmlType::F16, b.bytes(), y);
  EXPECT_EQ(y[0], -3.5f);
  EXPECT_TRUE(std::isinf(y[1]));
  ByteBuilder c;
  c.put<std::uint16_t>(0x3fc0);
  std::vector<float> z(1);
  dequantize_ggml(GgmlType::BF16, c.bytes(), z);
  EXPECT_EQ(z[0], 1.5f);
}

TEST(GgmlDequant, RefusesSizeMismatchAndUnsupportedTypes) {
  std::vector<std::uint8_t> data(18);
  std::vector<float> y(64);
  EXPECT_THROW(dequantize_ggml(GgmlType::Q4_0, data, y), std::invalid_argument);
  std::vector<float> z(32);
  EXPECT_NO_THROW(dequantize_ggml(GgmlType::Q4_0, data, z));
  EXPECT_THROW(dequantize_ggml(GgmlType::IQ4_NL, data, z), std::invalid_argument);  // 18 bytes, no dequantizer
  std::vector<float> odd(31);
  EXPECT_THROW(dequantize_ggml(GgmlType::Q4_0, data, odd), std::invalid_argument);
}

}  // namespace
}  // namespace tf
