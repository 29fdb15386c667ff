#include "backends/mlx/kernels/invariant_attention.h"

#include "backends/mlx/kernels/chunk_pool.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace tf {
namespace {

typedef float v8f __attribute__((vector_size(32)));

inline v8f load8(const float* p) {
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The same fixed-order dot product as invariant_matmul: 8 lanes, multiply then add, fixed lane tree, tail.
__attribute__((target_clones("avx2", "default"))) float dot(const float* a, const float* b, std::int64_t n) {
  v8f acc{};
  const std::int64_t n8 = n / 8 * 8;
  for (std::int64_t i = 0; i < n8; i += 8) {
    const v8f p = load8(a + i) * load8(b + i);
    acc = acc + p;
  }
  float s = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
  for (std::int64_t i = n8; i < n; ++i) {
    const float p = a[i] * b[i];
    s = s + p;
  }
  return s;
}

}  // namespace

void invariant_attention(const float* q, std::int64_t rows, std::int64_t start, const float* keys,
                         const float* values, std::int64_t capacity, const AttentionShape& s, float* out) {
  const int group = s.heads / s.kv_heads;
  const std::int64_t d = s.head_dim;
  const std::int64_t width = static_cast<std::int64_t>(s.heads) * d;
  const std::int64_t tasks = rows * s.heads;
  parallel_chunks(tasks, [&](std::int64_t t) {
    const std::int64_t i = t / s.heads;
    const int h = static_cast<int>(t % s.heads);
    const int g = h / group;
    const std::int64_t len = start + i + 1;  // causal: positions 0 .. start + i
    const float* qi = q + i * width + h * d;
    const float* kh = keys + g * capacity * d;
    const float* vh = values + g * capacity * d;
    std::vector<float> p(static_cast<std::size_t>(len));
    float m = -INFINITY;
    for (std::int64_t j = 0; j < len; ++j) {
      p[static_cast<std::size_t>(j)] = dot(qi, kh + j * d, d) * s.scale;
      m = std::max(m, p[static_cast<std::size_t>(j)]);
    }
    float sum = 0.0f;
    for (std::int64_t j = 0; j < len; ++j) {
      p[static_cast<std::size_t>(j)] = std::exp(p[static_cast<std::size_t>(j)] - m);
      sum = sum + p[static_cast<std::size_t>(j)];
    }
    float* o = out + i * width + h * d;
    for (std::int64_t c = 0; c < d; ++c) o[c] = 0.0f;
    for (std::int64_t j = 0; j < len; ++j) {
      const float w = p[static_cast<std::size_t>(j)];
      const float* vj = vh + j * d;
      for (std::int64_t c = 0; c < d; ++c) {
        const float a = w * vj[c];
        o[c] = o[c] + a;
      }
    }
    const float inv = 1.0f / sum;
    for (std::int64_t c = 0; c < d; ++c) o[c] = o[c] * inv;
  });
}

}  // namespace tf
