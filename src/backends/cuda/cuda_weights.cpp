#include "backends/cuda/cuda_weights.h"

#include "checkpoint/weight_forms.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/cuda/kernels/tiled_layout.h"
#include "checkpoint/half_float.h"

namespace tf::cuda_internal {
namespace {

using cuda::WeightView;

ElemType elem_type(HostDType d) {
  switch (d) {
    case HostDType::F32: return ElemType::F32;
    case HostDType::F16: return ElemType::F16;
    case HostDType::BF16: return ElemType::BF16;
  }
  return ElemType::F32;
}

// ---- host-side float conversions (exact, for upload; checkpoint/half_float.h does the bits) ----
// f32 -> f16 when exact (returns false otherwise).
bool f32_to_f16_exact(float f, std::uint16_t& out) {
  if (std::isnan(f)) return false;
  const std::uint16_t h = f32_to_f16(f);
  if (std::bit_cast<std::uint32_t>(f16_to_f32(h)) != std::bit_cast<std::uint32_t>(f)) return false;
  out = h;
  return true;
}

std::vector<float> host_to_f32(const std::vector<std::uint8_t>& bytes, HostDType d, std::size_t n) {
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (d) {
      case HostDType::F32: std::memcpy(&out[i], bytes.data() + 4 * i, 4); break;
      case HostDType::F16: {
        std::uint16_t h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        out[i] = f16_to_f32(h);
        break;
      }
      case HostDType::BF16: {
        std::uint16_t h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        out[i] = bf16_to_f32(h);
        break;
      }
    }
  }
  return out;
}

DeviceWeight dense_weight(const std::vector<float>& v, std::int64_t rows, std::int64_t cols) {
  DeviceWeight d;
  d.rows = rows;
  d.cols = cols;
  auto blob = std::make_shared<DeviceBlob>(v.size() * 4, ElemType::F32);
  TF_CK(cudaMemcpy(blob->ptr, v.data(), v.size() * 4, cudaMemcpyHostToDevice));
  d.data = Tensor(blob);
  return d;
}

// Affine codes go to the device in the tiled layout when the format allows (tiled_layout.h: the
// tensor-core decode kernel reads it), else as the checkpoint stores them (2-bit codes always).
Tensor upload_codes(const HostWeight& w) {
  const std::int64_t wpr = w.cols * w.bits / 32;
  if (!cuda::tileable(w.bits, w.group_size, w.cols)) {
    auto codes = std::make_shared<DeviceBlob>(w.data.size(), ElemType::F32);
    TF_CK(cudaMemcpy(codes->ptr, w.data.data(), w.data.size(), cudaMemcpyHostToDevice));
    return Tensor(codes);
  }
  std::vector<std::uint32_t> words(static_cast<std::size_t>(w.rows * wpr));
  std::memcpy(words.data(), w.data.data(), words.size() * 4);
  const std::vector<std::uint32_t> tiled = cuda::tile_words(words.data(), w.rows, wpr);
  auto codes = std::make_shared<DeviceBlob>(tiled.size() * 4, ElemType::F32);
  TF_CK(cudaMemcpy(codes->ptr, tiled.data(), tiled.size() * 4, cudaMemcpyHostToDevice));
  return Tensor(codes);
}

// A weight on the integer decode kernel streams its scales and biases from a tiled copy (kernels.h,
// tile_scale_bias): it is made on the device and rides in the scales blob after the row-major scales, at a
// 256-byte boundary. The prefill GEMM and the other kernels keep reading the row-major arrays.
void add_tiled_scale_bias(DeviceWeight& d, cudaStream_t stream) {
  const cuda::WeightView v = device_weight_view(d);
  const std::size_t extra = cuda::tiled_scale_bias_bytes(v);
  if (extra == 0) return;
  const DeviceBlob* s = blob(d.scales);
  const std::size_t at = (s->bytes + 255) / 256 * 256;
  auto grown = std::make_shared<DeviceBlob>(at + extra, s->dtype);
  TF_CK(cudaMemcpyAsync(grown->ptr, s->ptr, s->bytes, cudaMemcpyDeviceToDevice, stream));
  cuda::tile_scale_bias(v, static_cast<unsigned char*>(grown->ptr) + at, stream);
  TF_CK(cudaStreamSynchronize(stream));
  grown->aux_offset = at;
  d.scales = Tensor(grown);
}

// Whether affine codes of this format stay packed on the device: the formats the SIMT decode kernel
// (decode_linear.cu) and the prefill GEMM both take. 2-bit codes go in 16-byte chunks of 64, each in one
// group, so their groups are multiples of 64; 2-bit is never tiled (tiled_layout.h), so it never reaches the
// tensor-core kernels.
bool kept_packed(int bits, int group, std::int64_t cols) {
  if (group <= 0 || cols % group != 0) return false;
  if (bits == 4 || bits == 8) return group % 32 == 0;
  if (bits == 2) return group % 64 == 0;
  return false;
}

}  // namespace

DeviceWeight upload_weight(const HostWeight& w) {
  // GGUF blocks: Q4_0/Q4_1/Q8_0 as 4/8-bit affine groups (the tensor-core kernels), other types dense.
  if (w.ggml_blocks()) return upload_weight(portable_weight(w));
  DeviceWeight d;
  d.rows = w.rows;
  d.cols = w.cols;
  const auto elems = static_cast<std::size_t>(w.rows * w.cols);
  if (w.bits != 0 && !kept_packed(w.bits, w.group_size, w.cols)) {
    // Formats without a kernel: dequantized at load (reference rounding: scale*q, then + bias).
    const auto groups = static_cast<std::size_t>(w.rows * (w.cols / w.group_size));
    const auto sc = host_to_f32(w.scales, w.dtype, groups), bi = host_to_f32(w.biases, w.dtype, groups);
    std::vector<float> dense(elems);
    const auto* words = reinterpret_cast<const std::uint32_t*>(w.data.data());
    const std::int64_t wpr = w.cols * w.bits / 32;
    for (std::int64_t r = 0; r < w.rows; ++r)
      for (std::int64_t k = 0; k < w.cols; ++k) {
        const std::int64_t bit = k * w.bits;
        const std::uint32_t* row = words + r * wpr;
        std::uint64_t v = row[bit >> 5];
        if ((bit & 31) + w.bits > 32) v |= static_cast<std::uint64_t>(row[(bit >> 5) + 1]) << 32;
        const auto q = static_cast<float>((v >> (bit & 31)) & ((1u << w.bits) - 1u));
        const std::size_t g = static_cast<std::size_t>(r * (w.cols / w.group_size) + k / w.group_size);
        const float sq = sc[g] * q;
        dense[static_cast<std::size_t>(r * w.cols + k)] = sq + bi[g];
      }
    return dense_weight(dense, w.rows, w.cols);
  }
  if (w.bits == 0) {
    if (w.rows == 1 || w.dtype == HostDType::F32) return dense_weight(host_to_f32(w.data, w.dtype, elems), w.rows, w.cols);
    auto blob = std::make_shared<DeviceBlob>(w.data.size(), elem_type(w.dtype));
    TF_CK(cudaMemcpy(blob->ptr, w.data.data(), w.data.size(), cudaMemcpyHostToDevice));
    d.data = Tensor(blob);
    return d;
  }
  d.data = upload_codes(w);
  d.bits = w.bits;
  d.group_size = w.group_size;
  // Scales and biases: float32 from GGUF (converted from f16) go back to f16 when every value is exact
  // there, halving their bytes; other types stay as they are.
  const auto groups = static_cast<std::size_t>(w.rows * (w.cols / w.group_size));
  std::vector<std::uint8_t> s = w.scales, b = w.biases;
  ElemType t = elem_type(w.dtype);
  if (w.dtype == HostDType::F32) {
    std::vector<std::uint8_t> s16(groups * 2), b16(groups * 2);
    bool exact = true;
    for (std::size_t i = 0; i < groups && exact; ++i) {
      float fs, fb;
      std::memcpy(&fs, s.data() + 4 * i, 4);
      std::memcpy(&fb, b.data() + 4 * i, 4);
      std::uint16_t hs, hb;
      exact = f32_to_f16_exact(fs, hs) && f32_to_f16_exact(fb, hb);
      if (exact) {
        std::memcpy(s16.data() + 2 * i, &hs, 2);
        std::memcpy(b16.data() + 2 * i, &hb, 2);
      }
    }
    if (exact) {
      s = std::move(s16);
      b = std::move(b16);
      t = ElemType::F16;
    }
  }
  auto sblob = std::make_shared<DeviceBlob>(s.size(), t), bblob = std::make_shared<DeviceBlob>(b.size(), t);
  TF_CK(cudaMemcpy(sblob->ptr, s.data(), s.size(), cudaMemcpyHostToDevice));
  TF_CK(cudaMemcpy(bblob->ptr, b.data(), b.size(), cudaMemcpyHostToDevice));
  d.scales = Tensor(sblob);
  d.biases = Tensor(bblob);
  add_tiled_scale_bias(d, nullptr);
  return d;
}

DeviceWeight random_device_weight(std::int64_t rows, std::int64_t cols, int bits, int group, HostDType dtype,
                                  std::uint64_t seed, cudaStream_t stream) {
  DeviceWeight d;
  d.rows = rows;
  d.cols = cols;
  const auto elems = static_cast<std::size_t>(rows * cols);
  if (bits == 0) {
    const ElemType t = rows == 1 ? ElemType::F32 : elem_type(dtype);
    auto blob = std::make_shared<DeviceBlob>(elems * cuda::elem_bytes(t), t);
    const float a = rows == 1 ? 0.1f : 1.0f / std::sqrt(static_cast<float>(cols));
    cuda::fill_random_uniform(blob->ptr, t, static_cast<std::int64_t>(elems), rows == 1 ? 1.0f - a : -a,
                              rows == 1 ? 1.0f + a : a, seed, stream);
    TF_CK(cudaStreamSynchronize(stream));
    d.data = Tensor(blob);
    return d;
  }
  if (!kept_packed(bits, group, cols))
    throw std::invalid_argument(
        "random_weight: bits 4 or 8 with a group a multiple of 32, or bits 2 with a group a multiple of 64, "
        "dividing cols");
  // Random codes: the tiled layout is a permutation of words, so only its padding rows need room.
  const std::int64_t code_rows = cuda::tileable(bits, group, cols) ? cuda::tiled_rows(rows) : rows;
  auto codes = std::make_shared<DeviceBlob>(static_cast<std::size_t>(code_rows * cols * bits / 8), ElemType::F32);
  cuda::fill_random_bits(codes->ptr, codes->bytes, seed, stream);
  const auto groups = static_cast<std::int64_t>(rows * (cols / group));
  const ElemType t = elem_type(dtype);
  auto s = std::make_shared<DeviceBlob>(static_cast<std::size_t>(groups) * cuda::elem_bytes(t), t);
  auto b = std::make_shared<DeviceBlob>(static_cast<std::size_t>(groups) * cuda::elem_bytes(t), t);
  // w = s*q + b with q in [0, 2^bits): values of order 1/sqrt(cols), centred.
  const float range = 1.0f / std::sqrt(static_cast<float>(cols));
  const float levels = static_cast<float>((1 << bits) - 1);
  cuda::fill_random_uniform(s->ptr, t, groups, 0.5f * range / levels, 1.5f * range / levels, seed + 1, stream);
  cuda::fill_random_uniform(b->ptr, t, groups, -1.1f * range, -0.9f * range, seed + 2, stream);
  TF_CK(cudaStreamSynchronize(stream));
  d.data = Tensor(codes);
  d.scales = Tensor(s);
  d.biases = Tensor(b);
  d.bits = bits;
  d.group_size = group;
  add_tiled_scale_bias(d, stream);
  return d;
}

WeightView device_weight_view(const DeviceWeight& d) {
  WeightView v;
  auto* data = blob(d.data);
  v.data = data->ptr;
  v.rows = d.rows;
  v.cols = d.cols;
  v.bits = d.bits;
  v.group = d.group_size;
  if (d.quantized()) {
    auto* s = blob(d.scales);
    v.scales = s->ptr;
    v.biases = blob(d.biases)->ptr;
    v.dtype = s->dtype;
    v.tiled = cuda::tileable(d.bits, d.group_size, d.cols);
    if (s->aux_offset != 0) v.sb_tiled = static_cast<const unsigned char*>(s->ptr) + s->aux_offset;
  } else {
    v.dtype = data->dtype;
  }
  return v;
}

}  // namespace tf::cuda_internal
