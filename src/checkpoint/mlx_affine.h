#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace tf {

// MLX affine group quantization: w = scale * q + bias per group of `group_size` elements along a row.
struct AffineSpec {
  int bits = 4;
  int group_size = 64;
  bool operator==(const AffineSpec&) const = default;
};
bool is_supported_affine(const AffineSpec& s);  // bits 2,3,4,5,6,8 x groups 32,64,128

// The float type that scales and biases are stored in; dequantized values are rounded to it.
enum class AffineFloat { F32, F16, BF16 };

// Unpacks the codes of a [rows, cols] matrix stored as uint32 words [rows, cols*bits/32]. Bits 2/4/8 sit
// LSB-first in each word; 3/5/6-bit rows are one little-endian bitstream, so codes may straddle words.
void unpack_affine_codes(std::span<const std::uint32_t> packed, std::size_t rows, std::size_t cols, int bits,
                         std::span<std::uint8_t> codes);

// Reference dequantization with MLX's arithmetic: (scale * q) rounded to the scale type, then + bias,
// rounded again. `scales`/`biases` hold [rows, cols/group] values of type `ft` (raw little-endian bytes).
// Output is float32 holding values of type `ft`. Throws std::invalid_argument on inconsistent sizes.
void dequantize_affine(std::span<const std::uint32_t> packed, std::span<const std::uint8_t> scales,
                       std::span<const std::uint8_t> biases, AffineFloat ft, std::size_t rows, std::size_t cols,
                       const AffineSpec& spec, std::span<float> out);

// The `quantization` block of an MLX checkpoint's config.json: defaults plus per-module overrides
// (an override may also be `false`: that module stays unquantized).
struct AffineQuantConfig {
  AffineSpec defaults;
  std::string mode = "affine";
  std::map<std::string, std::optional<AffineSpec>> overrides;
  // The spec for a module path such as "model.layers.0.mlp.down_proj"; nullopt = not quantized.
  std::optional<AffineSpec> spec_for(std::string_view module_path) const;
};
// Reads `quantization` (or `quantization_config` without a quant_method). nullopt when absent.
// Throws std::invalid_argument for a malformed block.
std::optional<AffineQuantConfig> parse_affine_quant_config(const nlohmann::json& config);

}  // namespace tf
