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

}  // namespace tf
