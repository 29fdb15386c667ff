#include "checkpoint/mlx_affine.h"

#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "checkpoint/half_float.h"

namespace tf {
namespace {

float load_float(const std::uint8_t* p, AffineFloat ft) {
  if (ft == AffineFloat::F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return ft == AffineFloat::F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

// Rounds a float32 to the nearest value of type ft (float32 itself is left alone).
float round_to(float x, AffineFloat ft) {
  switch (ft) {
    case AffineFloat::F16: return f16_to_f32(f32_to_f16(x));
    case AffineFloat::BF16: return bf16_to_f32(f32_to_bf16(x));
    case AffineFloat::F32: break;
  }
  return x;
}

std::size_t float_bytes(AffineFloat ft) { return ft == AffineFloat::F32 ? 4 : 2; }

// a * b for sizes derived from the caller's shape. A product that wraps could match a small buffer and
// send the loops past its end, so an overflow is refused like any other mismatch.
std::size_t shape_product(std::size_t a, std::size_t b, const char* fn) {
  std::size_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw std::invalid_argument(std::string(fn) + ": shape overflows");
  return r;
}

// Reads an integer field into `out`; values outside [0, 1024] are refused as they are written, before
// narrowing to int could turn e.g. 4294967300 into a valid 4.
void read_int_field(const nlohmann::json& j, const char* key, int& out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) return;
  if (!it->is_number_integer()) throw std::invalid_argument(where + ": " + key + " is not an integer");
  const bool in_range = it->is_number_unsigned() ? it->get<std::uint64_t>() <= 1024
                                                 : it->get<std::int64_t>() >= 0 && it->get<std::int64_t>() <= 1024;
  if (!in_range) throw std::invalid_argument(where + ": unsupported affine " + key + "=" + it->dump());
  out = it->get<int>();
}

AffineSpec parse_spec(const nlohmann::json& j, const AffineSpec& fallback, const std::string& where) {
  AffineSpec s = fallback;
  read_int_field(j, "bits", s.bits, where);
  read_int_field(j, "group_size", s.group_size, where);
  if (!is_supported_affine(s))
    throw std::invalid_argument(where + ": unsupported affine bits=" + std::to_string(s.bits) +
                                " group_size=" + std::to_string(s.group_size));
  return s;
}

}  // namespace

bool is_supported_affine(const AffineSpec& s) {
  const bool bits_ok = s.bits == 2 || s.bits == 3 || s.bits == 4 || s.bits == 5 || s.bits == 6 || s.bits == 8;
  const bool group_ok = s.group_size == 32 || s.group_size == 64 || s.group_size == 128;
  return bits_ok && group_ok;
}

void unpack_affine_codes(std::span<const std::uint32_t> packed, std::size_t rows, std::size_t cols, int bits,
                         std::span<std::uint8_t> codes) {
  if (bits < 1 || bits > 8 || shape_product(cols, static_cast<std::size_t>(bits), "unpack_affine_codes") % 32 != 0)
    throw std::invalid_argument("unpack_affine_codes: a row of " + std::to_string(cols) + " " +
                                std::to_string(bits) + "-bit codes does not fill whole 32-bit words");
  const std::size_t words_per_row = cols * static_cast<std::size_t>(bits) / 32;
  if (packed.size() != shape_product(rows, words_per_row, "unpack_affine_codes") ||
      codes.size() != shape_product(rows, cols, "unpack_affine_codes"))
    throw std::invalid_argument("unpack_affine_codes: buffer sizes do not match the shape");
  if (codes.empty()) return;  // rows x 0 (or 0 x cols): nothing to do, however large the other side
  const std::uint32_t mask = (1u << bits) - 1u;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint32_t* row = packed.data() + r * words_per_row;
    std::uint8_t* out = codes.data() + r * cols;
    for (std::size_t j = 0; j < cols; ++j) {
      const std::size_t bit = j * static_cast<std::size_t>(bits);
      const std::size_t word = bit / 32, shift = bit % 32;
      std::uint64_t window = row[word];
      if (shift + static_cast<std::size_t>(bits) > 32) window |= static_cast<std::uint64_t>(row[word + 1]) << 32;
      out[j] = static_cast<std::uint8_t>((window >> shift) & mask);
    }
  }
}

void dequantize_affine(std::span<const std::uint32_t> packed, std::span<const std::uint8_t> scales,
                       std::span<const std::uint8_t> biases, AffineFloat ft, std::size_t rows, std::size_t cols,
                       const AffineSpec& spec, std::span<float> out) {
  if (!is_supported_affine(spec)) throw std::invalid_argument("dequantize_affine: unsupported bits/group size");
  const auto g = static_cast<std::size_t>(spec.group_size);
  if (cols % g != 0) throw std::invalid_argument("dequantize_affine: row length is not a multiple of the group");
  const std::size_t groups = cols / g;
  const std::size_t fb = float_bytes(ft);
  const std::size_t scale_bytes =
      shape_product(shape_product(rows, groups, "dequantize_affine"), fb, "dequantize_affine");
  if (scales.size() != scale_bytes || biases.size() != scale_bytes ||
      out.size() != shape_product(rows, cols, "dequantize_affine"))
    throw std::invalid_argument("dequantize_affine: scales, biases or output size does not match the shape");
  if (out.empty()) return;  // rows x 0 (or 0 x cols): nothing to do, however large the other side
  std::vector<std::uint8_t> codes(rows * cols);
  unpack_affine_codes(packed, rows, cols, spec.bits, codes);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t k = 0; k < groups; ++k) {
      const float s = load_float(scales.data() + (r * groups + k) * fb, ft);
      const float b = load_float(biases.data() + (r * groups + k) * fb, ft);
      for (std::size_t j = k * g; j < (k + 1) * g; ++j) {
        const float scaled = round_to(s * static_cast<float>(codes[r * cols + j]), ft);
        out[r * cols + j] = round_to(scaled + b, ft);
      }
    }
  }
}

std::optional<AffineSpec> AffineQuantConfig::spec_for(std::string_view module_path) const {
  if (auto it = overrides.find(std::string(module_path)); it != overrides.end()) return it->second;
  return defaults;
}

std::optional<AffineQuantConfig> parse_affine_quant_config(const nlohmann::json& config) {
  const nlohmann::json* q = nullptr;
  if (auto it = config.find("quantization"); it != config.end()) {
    q = &*it;
  } else if (auto jt = config.find("quantization_config"); jt != config.end() && !jt->contains("quant_method")) {
    q = &*jt;  // mlx-lm mirrors the block here; foreign formats carry a quant_method instead
  }
  if (q == nullptr) return std::nullopt;
  if (!q->is_object()) throw std::invalid_argument("quantization is not an object");
  AffineQuantConfig c;
  if (auto m = q->find("mode"); m != q->end()) {
    if (!m->is_string()) throw std::invalid_argument("quantization.mode is not a string");
    c.mode = m->get<std::string>();
  }
  c.defaults = parse_spec(*q, AffineSpec{}, "quantization");
  for (auto it = q->begin(); it != q->end(); ++it) {
    if (!it->is_object() && !it->is_boolean()) continue;  // bits, group_size, mode, ...
    if (it->is_boolean()) {
      if (it->get<bool>()) c.overrides[it.key()] = c.defaults;
      else c.overrides[it.key()] = std::nullopt;
      continue;
    }
    c.overrides[it.key()] = parse_spec(*it, c.defaults, "quantization." + it.key());
  }
  return c;
}

}  // namespace tf
