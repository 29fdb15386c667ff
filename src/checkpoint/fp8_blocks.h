#pragma once
// Block-scaled FP8 weights (families-and-formats §3c: DeepSeek / Qwen-FP8 / GLM FP8 releases): `P.weight` float8
// E4M3 [out, in] and `P.weight_scale_inv` float32 [ceil(out / block_rows), ceil(in / block_cols)], the value being
// code * scale (multiplied, despite the name). Dequantized on the CPU to float32, each value one float32 product
// of the exact E4M3 value and its block's scale (torch's `weight.float() * scale`, bit for bit).
#include <cstdint>
#include <span>
#include <vector>

namespace tf {

// DeepSeek-V4 stores the same blocks with UE8M0 scales (a power of two 2^(e - 127), one byte) under `P.scale`, and
// its routed experts as MXFP4: int8 bytes of two E2M1 codes (the low nibble the even input) with a UE8M0 scale
// per 32 inputs. Both are dequantized here exactly (every product is a power-of-two scaling).

// The value of a UE8M0 scale byte: 2^(e - 127) (0xFF, NaN, is the caller's to refuse).
float e8m0_value(std::uint8_t e);
// MXFP4 [rows, cols] (cols / 2 bytes a row) with scales [rows, cols / 32] (UE8M0 bytes) to float32.
std::vector<float> dequantize_mxfp4(std::span<const std::uint8_t> packed, std::int64_t rows, std::int64_t cols,
                                    std::span<const std::uint8_t> scales);

// The value of an E4M3 (fn: no infinities, 0x7F / 0xFF NaN) code.
float e4m3_value(std::uint8_t code);

// codes [rows, cols] times the scale of each (block_rows x block_cols) block, scales [ceil(rows / block_rows),
// ceil(cols / block_cols)] row-major. Sizes are the caller's to check.
std::vector<float> dequantize_fp8_blocks(std::span<const std::uint8_t> codes, std::int64_t rows, std::int64_t cols,
                                         std::span<const float> scales, std::int64_t block_rows,
                                         std::int64_t block_cols);

}  // namespace tf
