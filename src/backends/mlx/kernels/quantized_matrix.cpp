#include "backends/mlx/kernels/quantized_matrix.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "checkpoint/ggml_dequant.h"
#include "checkpoint/half_float.h"

namespace tf {
namespace {

bool has_block_kernel(GgmlType t) {
  return t == GgmlType::Q4_0 || t == GgmlType::Q4_1 || t == GgmlType::Q5_0 || t == GgmlType::Q5_1 ||
         t == GgmlType::Q8_0 || t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K;
}

std::vector<float> widen(const std::vector<std::uint8_t>& bytes, HostDType dt) {
  const std::size_t size = dt == HostDType::F32 ? 4 : 2;
  std::vector<float> out(bytes.size() / size);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint16_t h = 0;
    switch (dt) {
      case HostDType::F32:
        std::memcpy(&out[i], bytes.data() + 4 * i, 4);
        break;
      case HostDType::F16:
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        out[i] = f16_to_f32(h);
        break;
      case HostDType::BF16:
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        out[i] = bf16_to_f32(h);
        break;
    }
  }
  return out;
}

float round_to(float v, HostDType dt) {
  switch (dt) {
    case HostDType::F16:
      return f16_to_f32(f32_to_f16(v));
    case HostDType::BF16:
      return bf16_to_f32(f32_to_bf16(v));
    case HostDType::F32:
      break;
  }
  return v;
}

}  // namespace

std::size_t QuantizedMatrix::row_bytes() const {
  if (blocks == GgmlType::F32) return static_cast<std::size_t>(cols * bits / 8);
  const auto info = ggml_type_info(static_cast<std::uint32_t>(blocks));
  return static_cast<std::size_t>(cols / group) * info->block_bytes;
}

std::size_t QuantizedMatrix::bytes() const { return data.size() + 4 * (scales.size() + biases.size()); }

QuantizedMatrix quantized_matrix(HostWeight w) {
  QuantizedMatrix q;
  q.rows = w.rows;
  q.cols = w.cols;
  q.group = w.group_size;
  if (w.ggml_blocks()) {
    if (!has_block_kernel(w.block_type))
      throw std::invalid_argument("no CPU kernel for GGUF " + std::string(ggml_type_name(w.block_type)) + " blocks");
    q.blocks = w.block_type;
    q.bits = w.bits;
  } else {
    const bool bits_ok = w.bits == 2 || w.bits == 3 || w.bits == 4 || w.bits == 5 || w.bits == 6 || w.bits == 8;
    const bool group_ok = w.group_size == 32 || w.group_size == 64 || w.group_size == 128;
    if (!bits_ok || !group_ok || w.cols % w.group_size != 0)
      throw std::invalid_argument("no CPU kernel for " + std::to_string(w.bits) + "-bit affine groups of " +
                                  std::to_string(w.group_size) + " over rows of " + std::to_string(w.cols));
    q.bits = w.bits;
    q.scale_dtype = w.dtype;
    q.scales = widen(w.scales, w.dtype);
    q.biases = widen(w.biases, w.dtype);
  }
  q.data = std::move(w.data);
  if (q.data.size() != static_cast<std::size_t>(q.rows) * q.row_bytes())
    throw std::invalid_argument("quantized weight '" + w.name + "' holds " + std::to_string(q.data.size()) +
                                " bytes, not " + std::to_string(q.rows) + " rows of " + std::to_string(q.row_bytes()));
  return q;
}

void dequantize_rows(const QuantizedMatrix& w, std::span<const std::int32_t> ids, float* out) {
  const std::size_t rb = w.row_bytes();
  for (const auto id : ids) {
    if (id < 0 || id >= w.rows) throw std::out_of_range("dequantize_rows: row " + std::to_string(id));
    const std::uint8_t* row = w.data.data() + static_cast<std::size_t>(id) * rb;
    if (w.blocks != GgmlType::F32) {
      dequantize_ggml(w.blocks, std::span<const std::uint8_t>(row, rb),
                      std::span<float>(out, static_cast<std::size_t>(w.cols)));
    } else {
      // Each value is round(round(scale * q) + bias) in the scale dtype, as MLX computes it. Where a group has
      // more values than codes (4-bit and below at every group size), its 2^bits values are computed once and
      // looked up: the same bits for a fraction of the roundings (prefill dequantizes every expert's weights).
      const std::int64_t groups = w.cols / w.group;
      const std::uint32_t mask = (1u << w.bits) - 1u;
      const std::int64_t codes = std::int64_t{1} << w.bits;
      const bool table = 2 * codes <= w.group;
      float lut[256];
      for (std::int64_t gi = 0; gi < groups; ++gi) {
        const auto g = static_cast<std::size_t>(id * groups + gi);
        const float scale = w.scales[g], bias = w.biases[g];
        const auto value = [&](std::uint32_t q) {
          const float scaled = round_to(scale * static_cast<float>(q), w.scale_dtype);
          return round_to(scaled + bias, w.scale_dtype);
        };
        if (table)
          for (std::int64_t c = 0; c < codes; ++c) lut[c] = value(static_cast<std::uint32_t>(c));
        const std::int64_t k0 = gi * w.group;
        if (table && w.bits == 4) {  // two codes a byte, the low nibble first
          const std::uint8_t* bytes = row + k0 / 2;
          for (std::int64_t j = 0; j < w.group / 2; ++j) {
            out[k0 + 2 * j] = lut[bytes[j] & 15u];
            out[k0 + 2 * j + 1] = lut[bytes[j] >> 4];
          }
          continue;
        }
        for (std::int64_t k = k0; k < k0 + w.group; ++k) {
          const std::int64_t bit = k * w.bits;
          std::uint32_t v = row[bit >> 3] >> (bit & 7);
          if ((bit & 7) + w.bits > 8) v |= static_cast<std::uint32_t>(row[(bit >> 3) + 1]) << (8 - (bit & 7));
          out[k] = table ? lut[v & mask] : value(v & mask);
        }
      }
    }
    out += w.cols;
  }
}

}  // namespace tf
