#pragma once
// Helpers for the CUDA tests: device buffers, random affine/dense weights made on the host (so the float64
// reference sees the same bits), float64 reference math, and error measures.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/tiled_layout.h"

namespace tf::cuda::test {

// Relative error allowed against float64 for kernels that compute in float32 throughout.
constexpr double kF32Tol = 1e-5;

inline void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// A device buffer that copies to and from host vectors.
template <typename T>
struct DevBuf {
  T* p = nullptr;
  std::size_t n = 0;
  DevBuf() = default;
  explicit DevBuf(std::size_t count) : n(count) { ck(cudaMalloc(reinterpret_cast<void**>(&p), std::max<std::size_t>(count, 1) * sizeof(T)), "cudaMalloc"); }
  explicit DevBuf(const std::vector<T>& v) : DevBuf(v.size()) { upload(v); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  DevBuf(DevBuf&& o) noexcept : p(o.p), n(o.n) { o.p = nullptr; }
  DevBuf& operator=(DevBuf&& o) noexcept {
    std::swap(p, o.p);
    std::swap(n, o.n);
    return *this;
  }
  ~DevBuf() { cudaFree(p); }
  void upload(const std::vector<T>& v) { ck(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "upload"); }
  std::vector<T> download() const {
    std::vector<T> v(n);
    ck(cudaDeviceSynchronize(), "sync");
    ck(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return v;
  }
  // Fills with a NaN pattern, so an element the kernel never writes fails the comparison.
  void poison() { ck(cudaMemset(p, 0xFF, n * sizeof(T)), "poison"); }
};

inline std::mt19937_64& rng() {
  static std::mt19937_64 g(std::random_device{}());
  return g;
}
inline std::vector<float> random_floats(std::size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng());
  return v;
}

inline std::uint16_t f32_to_bf16(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  const std::uint32_t r = b + 0x7FFFu + ((b >> 16) & 1u);
  return static_cast<std::uint16_t>(r >> 16);
}
inline float bf16_to_f32(std::uint16_t h) {
  const std::uint32_t b = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline std::uint16_t f32_to_f16(float f) {  // round to nearest even, normal range only (test values)
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  const std::uint32_t sign = (b >> 16) & 0x8000u;
  const int exp = static_cast<int>((b >> 23) & 0xff) - 127 + 15;
  std::uint32_t mant = b & 0x7fffffu;
  if (exp <= 0) return static_cast<std::uint16_t>(sign);
  std::uint32_t h = (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  const std::uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}
inline float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(mant), -24);
  const std::uint32_t bits = sign | ((exp + 112) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// A weight made on the host: affine (bits > 0) or dense, with its exact float values for the reference.
struct HostW {
  std::int64_t rows = 0, cols = 0;
  int bits = 0, group = 0;
  ElemType dtype = ElemType::F32;
  std::vector<std::uint8_t> data, scales, biases;
  std::vector<double> values;  // rows * cols dequantized values (exact in double)
};

inline std::vector<std::uint8_t> encode(const std::vector<float>& v, ElemType t) {
  std::vector<std::uint8_t> out(v.size() * elem_bytes(t));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (t == ElemType::F32) {
      std::memcpy(out.data() + 4 * i, &v[i], 4);
    } else {
      const std::uint16_t h = t == ElemType::F16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}
inline float decode_one(const std::vector<std::uint8_t>& b, ElemType t, std::size_t i) {
  if (t == ElemType::F32) {
    float f;
    std::memcpy(&f, b.data() + 4 * i, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, b.data() + 2 * i, 2);
  return t == ElemType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

inline HostW make_weight(std::int64_t rows, std::int64_t cols, int bits, int group, ElemType dtype) {
  HostW w;
  w.rows = rows;
  w.cols = cols;
  w.bits = bits;
  w.group = group;
  w.dtype = dtype;
  w.values.resize(static_cast<std::size_t>(rows * cols));
  const float range = 1.0f / std::sqrt(static_cast<float>(cols));
  if (bits == 0) {
    auto v = random_floats(static_cast<std::size_t>(rows * cols), -range, range);
    w.data = encode(v, dtype);
    for (std::size_t i = 0; i < v.size(); ++i) w.values[i] = decode_one(w.data, dtype, i);
    return w;
  }
  const std::int64_t groups = rows * (cols / group);
  const float levels = static_cast<float>((1 << bits) - 1);
  auto s = random_floats(static_cast<std::size_t>(groups), 0.5f * range / levels, 1.5f * range / levels);
  auto b = random_floats(static_cast<std::size_t>(groups), -1.1f * range, -0.9f * range);
  w.scales = encode(s, dtype);
  w.biases = encode(b, dtype);
  w.data.assign(static_cast<std::size_t>(rows * cols * bits / 8), 0);
  std::uniform_int_distribution<unsigned> qd(0, (1u << bits) - 1);
  auto* words = reinterpret_cast<std::uint32_t*>(w.data.data());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t k = 0; k < cols; ++k) {
      const unsigned q = qd(rng());
      const std::int64_t bit = (r * cols + k) * bits;
      words[bit >> 5] |= q << (bit & 31);
      const auto g = static_cast<std::size_t>(r * (cols / group) + k / group);
      w.values[static_cast<std::size_t>(r * cols + k)] =
          static_cast<double>(decode_one(w.scales, dtype, g)) * q + static_cast<double>(decode_one(w.biases, dtype, g));
    }
  return w;
}

inline std::vector<std::uint8_t> device_codes(const HostW& h) {
  if (h.bits == 0 || !tileable(h.bits, h.group, h.cols)) return h.data;
  const std::int64_t wpr = h.cols * h.bits / 32;
  std::vector<std::uint32_t> words(static_cast<std::size_t>(h.rows * wpr));
  std::memcpy(words.data(), h.data.data(), words.size() * 4);
  const std::vector<std::uint32_t> t = tile_words(words.data(), h.rows, wpr);
  std::vector<std::uint8_t> out(t.size() * 4);
  std::memcpy(out.data(), t.data(), out.size());
  return out;
}

// The weight on the device, with its view.
struct DevW {
  DevBuf<std::uint8_t> data, scales, biases, sb_tiled;
  WeightView view;
  // Affine codes go up tiled when the format allows, as the backend uploads them (tiled_layout.h).
  explicit DevW(const HostW& h) : data(device_codes(h)) {
    view.data = data.p;
    view.tiled = h.bits > 0 && tileable(h.bits, h.group, h.cols);
    view.rows = h.rows;
    view.cols = h.cols;
    view.bits = h.bits;
    view.group = h.group;
    view.dtype = h.dtype;
    if (h.bits > 0) {
      scales = DevBuf<std::uint8_t>(h.scales);
      biases = DevBuf<std::uint8_t>(h.biases);
      view.scales = scales.p;
      view.biases = biases.p;
      // The integer kernel's tiled copy of the scales and biases, made as the backend makes it.
      if (const std::size_t n = tiled_scale_bias_bytes(view); n > 0) {
        sb_tiled = DevBuf<std::uint8_t>(n);
        tile_scale_bias(view, sb_tiled.p, nullptr);
        ck(cudaDeviceSynchronize(), "tile_scale_bias");
        view.sb_tiled = sb_tiled.p;
      }
    }
  }
};

// y = x * w^T in float64.
inline std::vector<double> ref_linear(const std::vector<float>& x, std::int64_t rows, const HostW& w) {
  std::vector<double> y(static_cast<std::size_t>(rows * w.rows));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t n = 0; n < w.rows; ++n) {
      double acc = 0.0;
      for (std::int64_t k = 0; k < w.cols; ++k)
        acc += static_cast<double>(x[static_cast<std::size_t>(r * w.cols + k)]) * w.values[static_cast<std::size_t>(n * w.cols + k)];
      y[static_cast<std::size_t>(r * w.rows + n)] = acc;
    }
  return y;
}

// ||out - ref|| / ||ref||; NaN anywhere gives +inf.
template <typename T>
double rel_err(const std::vector<T>& out, const std::vector<double>& ref) {
  if (out.size() != ref.size()) return INFINITY;
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double o = static_cast<double>(out[i]);
    if (!std::isfinite(o)) return INFINITY;
    num += (o - ref[i]) * (o - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-300);
}

// A one-weight decode_linear call: `rows` rows of x (stride k) into y (stride n).
inline DecodeLinearArgs linear_args(const float* x, std::int64_t k, int rows, const WeightView& w, float* y, std::int64_t n) {
  DecodeLinearArgs a;
  a.x = x;
  a.x_stride = k;
  a.rows = rows;
  a.seg[0] = {w, y, n};
  return a;
}

// A decode_attention call over n_rows rows (scale 1 / sqrt(head_dim)), with max_splits partials in work.
inline DecodeAttnArgs attn_args(const float* q, float* out, const AttnRow* rows, int n_rows, int heads, int kv_heads,
                                int head_dim, int max_splits, float* work) {
  DecodeAttnArgs a;
  a.q = q;
  a.out = out;
  a.rows = rows;
  a.n_rows = n_rows;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.head_dim = head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  a.max_splits = max_splits;
  a.work = work;
  return a;
}

inline bool same_bits(const float* a, const float* b, std::size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

inline bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
#define TF_NEED_GPU() \
  if (!::tf::cuda::test::have_gpu()) GTEST_SKIP() << "no CUDA device"

}  // namespace tf::cuda::test
