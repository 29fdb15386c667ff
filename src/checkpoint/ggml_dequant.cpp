#include "checkpoint/ggml_dequant.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "checkpoint/half_float.h"

// The order of every multiply and add below follows the gguf package's numpy code (float32 throughout,
// f16 scales widened first). The project compiles with -ffp-contract=off so no step is fused into an FMA.

namespace tf {
namespace {

std::uint16_t u16_at(const std::uint8_t* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
float f16_at(const std::uint8_t* p) { return f16_to_f32(u16_at(p)); }

void q4_0(const std::uint8_t* b, float* y) {  // {f16 d, u8 qs[16]}
  const float d = f16_at(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>((b[2 + j] & 0x0f) - 8);
    y[j + 16] = d * static_cast<float>((b[2 + j] >> 4) - 8);
  }
}

void q4_1(const std::uint8_t* b, float* y) {  // {f16 d, f16 m, u8 qs[16]}
  const float d = f16_at(b), m = f16_at(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(b[4 + j] & 0x0f) + m;
    y[j + 16] = d * static_cast<float>(b[4 + j] >> 4) + m;
  }
}

// Q5_0 and Q5_1: the fifth bit of element j is bit j of the 32-bit qh (elements 0..15 in the low nibbles of qs,
// 16..31 in the high ones, as Q4_0).
std::uint32_t u32_at(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void q5_0(const std::uint8_t* b, float* y) {  // {f16 d, u32 qh, u8 qs[16]}
  const float d = f16_at(b);
  const std::uint32_t qh = u32_at(b + 2);
  for (int j = 0; j < 16; ++j) {
    const int lo = (b[6 + j] & 0x0f) | static_cast<int>(((qh >> j) & 1) << 4);
    const int hi = (b[6 + j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
    y[j] = d * static_cast<float>(lo - 16);
    y[j + 16] = d * static_cast<float>(hi - 16);
  }
}

void q5_1(const std::uint8_t* b, float* y) {  // {f16 d, f16 m, u32 qh, u8 qs[16]}
  const float d = f16_at(b), m = f16_at(b + 2);
  const std::uint32_t qh = u32_at(b + 4);
  for (int j = 0; j < 16; ++j) {
    const int lo = (b[8 + j] & 0x0f) | static_cast<int>(((qh >> j) & 1) << 4);
    const int hi = (b[8 + j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
    y[j] = d * static_cast<float>(lo) + m;
    y[j + 16] = d * static_cast<float>(hi) + m;
  }
}

void q8_0(const std::uint8_t* b, float* y) {  // {f16 d, i8 qs[32]}
  const float d = f16_at(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<std::int8_t>(b[2 + j])) * d;
}

// Q4_K and Q5_K: the 6-bit scale and min of sub-block j (of 8) from the 12 packed bytes.
void k_scale_min(const std::uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

void q4_k(const std::uint8_t* b, float* y) {  // {f16 d, f16 dmin, u8 scales[12], u8 qs[128]}
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const std::uint8_t* qs = b + 16;
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    k_scale_min(b + 4, j, sc, m);
    const float ds = d * static_cast<float>(sc);
    const float dm = dmin * static_cast<float>(m);
    const std::uint8_t* q = qs + 32 * (j / 2);  // sub-blocks 2c and 2c+1 share bytes: low then high nibble
    const int shift = (j % 2) * 4;
    for (int l = 0; l < 32; ++l) y[32 * j + l] = ds * static_cast<float>((q[l] >> shift) & 0x0f) - dm;
  }
}

void q5_k(const std::uint8_t* b, float* y) {  // {f16 d, f16 dmin, u8 scales[12], u8 qh[32], u8 qs[128]}
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const std::uint8_t* qh = b + 16;
  const std::uint8_t* qs = b + 48;
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    k_scale_min(b + 4, j, sc, m);
    const float ds = d * static_cast<float>(sc);
    const float dm = dmin * static_cast<float>(m);
    const std::uint8_t* q = qs + 32 * (j / 2);
    const int shift = (j % 2) * 4;
    for (int l = 0; l < 32; ++l) {  // the fifth bit of sub-block j's element l is bit j of qh[l]
      const int code = ((q[l] >> shift) & 0x0f) | (((qh[l] >> j) & 1) << 4);
      y[32 * j + l] = ds * static_cast<float>(code) - dm;
    }
  }
}

void q6_k(const std::uint8_t* b, float* y) {  // {u8 ql[128], u8 qh[64], i8 scales[16], f16 d}
  const std::uint8_t* ql = b;
  const std::uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const std::int8_t*>(b + 192);
  const float d = f16_at(b + 208);
  for (int half = 0; half < 2; ++half) {
    const std::uint8_t* l = ql + 64 * half;
    const std::uint8_t* h = qh + 32 * half;
    for (int i = 0; i < 128; ++i) {  // element i of this half
      const int quarter = i / 32, pos = i % 32;
      const int low = (l[pos + 32 * (quarter % 2)] >> (4 * (quarter / 2))) & 0x0f;
      const int high = (h[pos] >> (2 * quarter)) & 0x03;
      const int q = (low | (high << 4)) - 32;
      const int group = (128 * half + i) / 16;
      y[128 * half + i] = (d * static_cast<float>(sc[group])) * static_cast<float>(q);
    }
  }
}

}  // namespace

void dequantize_ggml(GgmlType type, std::span<const std::uint8_t> data, std::span<float> out) {
  auto info = ggml_type_info(static_cast<std::uint32_t>(type));
  if (!info || !info->dequantizable)
    throw std::invalid_argument("no reference dequantizer for ggml type " + std::string(ggml_type_name(type)));
  if (out.size() % info->block_elements != 0 ||
      out.size() / info->block_elements * info->block_bytes != data.size())
    throw std::invalid_argument("dequantize_ggml: " + std::to_string(data.size()) + " bytes of " +
                                std::string(info->name) + " do not hold " + std::to_string(out.size()) + " elements");
  if (out.empty()) return;  // a zero-element tensor: its spans may hold null, and memcpy(null, ..., 0) is UB
  const std::size_t blocks = out.size() / info->block_elements;
  const std::uint8_t* p = data.data();
  float* y = out.data();
  switch (type) {
    case GgmlType::F32: std::memcpy(y, p, out.size() * 4); return;
    case GgmlType::F16:
      for (std::size_t i = 0; i < out.size(); ++i) y[i] = f16_at(p + 2 * i);
      return;
    case GgmlType::BF16:
      for (std::size_t i = 0; i < out.size(); ++i) y[i] = bf16_to_f32(u16_at(p + 2 * i));
      return;
    default: break;
  }
  void (*block_fn)(const std::uint8_t*, float*) = nullptr;
  switch (type) {
    case GgmlType::Q4_0: block_fn = q4_0; break;
    case GgmlType::Q4_1: block_fn = q4_1; break;
    case GgmlType::Q5_0: block_fn = q5_0; break;
    case GgmlType::Q5_1: block_fn = q5_1; break;
    case GgmlType::Q8_0: block_fn = q8_0; break;
    case GgmlType::Q4_K: block_fn = q4_k; break;
    case GgmlType::Q5_K: block_fn = q5_k; break;
    case GgmlType::Q6_K: block_fn = q6_k; break;
    default: throw std::invalid_argument("unreachable ggml type");
  }
  for (std::size_t i = 0; i < blocks; ++i) block_fn(p + i * info->block_bytes, y + i * info->block_elements);
}

}  // namespace tf
