#include "checkpoint/fp8_blocks.h"

#include <cmath>
#include <limits>

namespace tf {

float e4m3_value(std::uint8_t code) {
  const int sign = code >> 7, exponent = (code >> 3) & 0xF, mantissa = code & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  const float magnitude = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)  // subnormal: m / 8 * 2^-6
                                        : std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
  return sign != 0 ? -magnitude : magnitude;
}

std::vector<float> dequantize_fp8_blocks(std::span<const std::uint8_t> codes, std::int64_t rows, std::int64_t cols,
                                         std::span<const float> scales, std::int64_t block_rows,
                                         std::int64_t block_cols) {
  float table[256];
  for (int c = 0; c < 256; ++c) table[c] = e4m3_value(static_cast<std::uint8_t>(c));
  const std::int64_t scale_cols = (cols + block_cols - 1) / block_cols;
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      out[static_cast<std::size_t>(r * cols + c)] =
          table[codes[static_cast<std::size_t>(r * cols + c)]] *
          scales[static_cast<std::size_t>((r / block_rows) * scale_cols + c / block_cols)];
  return out;
}

float e8m0_value(std::uint8_t e) { return std::ldexp(1.0f, static_cast<int>(e) - 127); }

std::vector<float> dequantize_mxfp4(std::span<const std::uint8_t> packed, std::int64_t rows, std::int64_t cols,
                                    std::span<const std::uint8_t> scales) {
  static constexpr float kE2m1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                      -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::uint8_t byte = packed[static_cast<std::size_t>(r * (cols / 2) + c / 2)];
      const int code = (c % 2 == 0) ? (byte & 0xF) : (byte >> 4);
      out[static_cast<std::size_t>(r * cols + c)] =
          kE2m1[code] * e8m0_value(scales[static_cast<std::size_t>(r * (cols / 32) + c / 32)]);
    }
  return out;
}

}  // namespace tf
