#include "checkpoint/weight_forms.h"

#include <cstring>
#include <span>

#include "checkpoint/ggml_dequant.h"
#include "checkpoint/half_float.h"

namespace tf {
namespace {

void append_f32(std::vector<std::uint8_t>& out, float v) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
  out.insert(out.end(), p, p + 4);
}

// Packs 32 codes of `bits` bits LSB-first into 32*bits/32 words appended to `out` (bytes).
void pack_block(const std::uint8_t* codes, int bits, std::vector<std::uint8_t>& out) {
  std::uint32_t word = 0;
  int filled = 0;
  for (int j = 0; j < 32; ++j) {
    word |= static_cast<std::uint32_t>(codes[j]) << filled;
    filled += bits;
    if (filled == 32) {
      const auto* p = reinterpret_cast<const std::uint8_t*>(&word);
      out.insert(out.end(), p, p + 4);
      word = 0;
      filled = 0;
    }
  }
}

// Q4_0: x = d*(q-8); Q4_1: x = d*q + m; Q8_0: x = d*q (q signed). As affine: scale d, bias -8d / m / -128d,
// codes unsigned. Low nibbles hold elements 0..15 of a block, high nibbles 16..31.
HostWeight affine_from_blocks(HostWeight w) {
  const GgmlType type = w.block_type;
  const std::vector<std::uint8_t> bytes = std::move(w.data);
  w.block_type = GgmlType::F32;
  w.dtype = HostDType::F32;
  w.group_size = 32;
  w.bits = type == GgmlType::Q8_0 ? 8 : 4;
  const std::size_t block_bytes = type == GgmlType::Q4_0 ? 18 : type == GgmlType::Q4_1 ? 20 : 34;
  const std::size_t blocks = bytes.size() / block_bytes;
  w.data.clear();
  w.data.reserve(blocks * 32 * static_cast<std::size_t>(w.bits) / 8);
  w.scales.reserve(blocks * 4);
  w.biases.reserve(blocks * 4);
  std::uint8_t codes[32];
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::uint8_t* p = bytes.data() + b * block_bytes;
    std::uint16_t dh;
    std::memcpy(&dh, p, 2);
    const float d = f16_to_f32(dh);
    float bias;
    const std::uint8_t* qs;
    if (type == GgmlType::Q8_0) {
      qs = p + 2;
      for (int j = 0; j < 32; ++j) codes[j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(qs[j]) + 128);
      bias = -128.0f * d;
    } else {
      if (type == GgmlType::Q4_1) {
        std::uint16_t mh;
        std::memcpy(&mh, p + 2, 2);
        bias = f16_to_f32(mh);
        qs = p + 4;
      } else {
        bias = -8.0f * d;
        qs = p + 2;
      }
      for (int j = 0; j < 16; ++j) {
        codes[j] = qs[j] & 0x0f;
        codes[j + 16] = static_cast<std::uint8_t>(qs[j] >> 4);
      }
    }
    pack_block(codes, w.bits, w.data);
    append_f32(w.scales, d);
    append_f32(w.biases, bias);
  }
  return w;
}

HostWeight dense_from_blocks(HostWeight w) {
  std::vector<float> values(static_cast<std::size_t>(w.rows * w.cols));
  dequantize_ggml(w.block_type, w.data, values);
  w.block_type = GgmlType::F32;
  w.bits = 0;
  w.group_size = 0;
  w.dtype = HostDType::F32;
  w.data.resize(values.size() * 4);
  std::memcpy(w.data.data(), values.data(), w.data.size());
  return w;
}

}  // namespace

HostWeight portable_weight(HostWeight w) {
  if (!w.ggml_blocks()) return w;
  switch (w.block_type) {
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q8_0:
      return affine_from_blocks(std::move(w));
    default:
      return dense_from_blocks(std::move(w));
  }
}

}  // namespace tf
