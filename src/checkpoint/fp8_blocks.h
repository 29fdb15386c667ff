#pragma once
// Block-scaled FP8 weights (families-and-formats §3c: DeepSeek / Qwen-FP8 / GLM FP8 releases): `P.weight` float8
// E4M3 [out, in] and `P.weight_scale_inv` float32 [ceil(out / block_rows), ceil(in / block_cols)], the value being
// code * scale (multiplied, despite the name). Dequantized on the CPU to float32, each value one float32 product
// of the exact E4M3 value and its block's scale (torch's `weight.float() * scale`, bit for bit).
#include <cstdint>
#include <span>
#include <vector>

namespace tf {

// The value of an E4M3 (fn: no infinities, 0x7F / 0xFF NaN) code.
float e4m3_value(std::uint8_t code);

// codes [rows, cols] times the scale of each (block_rows x block_cols) block, scales [ceil(rows / block_rows),
// ceil(cols / block_cols)] row-major. Sizes are the caller's to check.
std::vector<float> dequantize_fp8_blocks(std::span<const std::uint8_t> codes, std::int64_t rows, std::int64_t cols,
                                         std::span<const float> scales, std::int64_t block_rows,
                                         std::int64_t block_cols);

}  // namespace tf
