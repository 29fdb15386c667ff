#include "checkpoint/mlx_affine.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

#include "checkpoint/half_float.h"

// The bit-for-bit comparison with mlx.core.dequantize is in tests/conformance/test_mlx_dequant.py.

namespace tf {
namespace {

// Packs codes the way MLX does: one little-endian bitstream per row.
std::vector<std::uint32_t> pack(const std::vector<std::uint8_t>& codes, std::size_t rows, std::size_t cols, int bits) {
  std::vector<std::uint32_t> out(rows * cols * static_cast<std::size_t>(bits) / 32, 0);
  const std::size_t words = cols * static_cast<std::size_t>(bits) / 32;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < cols; ++j)
      for (int k = 0; k < bits; ++k)
        if ((codes[r * cols + j] >> k) & 1) {
          const std::size_t bit = j * static_cast<std::size_t>(bits) + static_cast<std::size_t>(k);
          out[r * words + bit / 32] |= 1u << (bit % 32);
        }
  return out;
}

TEST(MlxAffine, UnpackRoundTripsEveryBitWidth) {
  std::mt19937 rng(3);
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    const std::size_t rows = 3, cols = 128;
    std::vector<std::uint8_t> codes(rows * cols);
    for (auto& c : codes) c = static_cast<std::uint8_t>(rng() % (1u << bits));
    auto packed = pack(codes, rows, cols, bits);
    std::vector<std::uint8_t> back(rows * cols);
    unpack_affine_codes(packed, rows, cols, bits, back);
    EXPECT_EQ(back, codes) << bits << " bits";
  }
}

TEST(MlxAffine, FourBitsAreLsbFirstNibbles) {
  std::vector<std::uint32_t> packed = {0x76543210u, 0xfedcba98u};
  std::vector<std::uint8_t> codes(16);
  unpack_affine_codes(packed, 1, 16, 4, codes);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(codes[j], j);
}

TEST(MlxAffine, DequantizeRoundsStepwiseInTheScaleType) {
  // one row of 32 codes, all 3, one group: w = round(round(s*3) + b) in bf16
  std::vector<std::uint8_t> codes(32, 3);
  auto packed = pack(codes, 1, 32, 4);
  const float s = 0.1f, b = 1000.3f;
  std::uint16_t sb = f32_to_bf16(s), bb = f32_to_bf16(b);
  std::vector<std::uint8_t> scales(2), biases(2);
  std::memcpy(scales.data(), &sb, 2);
  std::memcpy(biases.data(), &bb, 2);
  std::vector<float> out(32);
  dequantize_affine(packed, scales, biases, AffineFloat::BF16, 1, 32, {4, 32}, out);
  const float scaled = bf16_to_f32(f32_to_bf16(bf16_to_f32(sb) * 3.0f));
  const float expect = bf16_to_f32(f32_to_bf16(scaled + bf16_to_f32(bb)));
  for (float v : out) EXPECT_EQ(v, expect);
}

TEST(MlxAffine, DequantizeChecksSizes) {
  std::vector<std::uint32_t> packed(4);
  std::vector<std::uint8_t> scales(4), biases(4);
  std::vector<float> out(32);
  EXPECT_NO_THROW(dequantize_affine(packed, scales, biases, AffineFloat::F32, 1, 32, {4, 32}, out));
  EXPECT_THROW(dequantize_affine(packed, scales, biases, AffineFloat::F32, 1, 32, {4, 64}, out), std::invalid_argument);
  EXPECT_THROW(dequantize_affine(packed, scales, biases, AffineFloat::F32, 1, 32, {7, 32}, out), std::invalid_argument);
  std::vector<float> short_out(31);
  EXPECT_THROW(dequantize_affine(packed, scales, biases, AffineFloat::F32, 1, 32, {4, 32}, short_out),
               std::invalid_argument);
}

TEST(MlxAffine, QuantConfigDefaultsAndOverrides) {
  auto c = parse_affine_quant_config(nlohmann::json::parse(R"({
    "quantization": {"group_size": 32, "bits": 3, "mode": "affine",
                     "model.layers.0.mlp.down_proj": {"group_size": 64, "bits": 8},
                     "lm_head": false}})"));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->defaults, (AffineSpec{3, 32}));
  EXPECT_EQ(c->spec_for("model.layers.1.mlp.down_proj"), (AffineSpec{3, 32}));
  EXPECT_EQ(c->spec_for("model.layers.0.mlp.down_proj"), (AffineSpec{8, 64}));
  EXPECT_FALSE(c->spec_for("lm_head").has_value());
  EXPECT_FALSE(parse_affine_quant_config(nlohmann::json::parse(R"({"hidden_size": 8})")).has_value());
  // foreign quantization_config (with a quant_method) is not MLX affine
  EXPECT_FALSE(parse_affine_quant_config(nlohmann::json::parse(R"({"quantization_config": {"quant_method": "fp8"}})"))
                   .has_value());
  EXPECT_THROW(parse_affine_quant_config(nlohmann::json::parse(R"({"quantization": {"bits": 7, "group_size": 64}})")),
               std::invalid_argument);
  EXPECT_THROW(parse_affine_quant_config(nlohmann::json::parse(R"({"quantization": {"bits": 4, "group_size": 48}})")),
               std::invalid_argument);
  EXPECT_THROW(parse_affine_quant_config(nlohmann::json::parse(R"({"quantization": {"bits": "4"}})")),
               std::invalid_argument);
}

}  // namespace
}  // namespace tf
