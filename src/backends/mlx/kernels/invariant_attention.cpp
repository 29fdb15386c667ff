#include "backends/mlx/kernels/invariant_attention.h"

#include "backends/mlx/kernels/chunk_pool.h"
#include "backends/mlx/kernels/lanes8.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace tf {
namespace {

// The same fixed-order dot product as invariant_matmul: 8 lanes, multiply then add, fixed lane tree, tail.
__attribute__((target_clones("avx2", "default"))) float dot(const float* a, const float* b, std::int64_t n) {
  v8f acc{};
  const std::int64_t n8 = n / 8 * 8;
  for (std::int64_t i = 0; i < n8; i += 8) {
    const v8f p = load8(a + i) * load8(b + i);
    acc = acc + p;
  }
  float s = reduce8(acc);
  for (std::int64_t i = n8; i < n; ++i) {
    const float p = a[i] * b[i];
    s = s + p;
  }
  return s;
}

// o[c] = sum over j in order of (p[j] * v[j][c]), each product rounded then added (never fused): the loops run
// c-blocks outside and j inside so the sums stay in registers, which reorders no element's operations.
__attribute__((target_clones("avx2", "default"))) void weighted_sum(const float* p, const float* v, std::int64_t len,
                                                                    std::int64_t d, float* o) {
  constexpr std::int64_t kBlock = 32;  // four 8-float vectors per pass over the values
  std::int64_t c = 0;
  for (; c + kBlock <= d; c += kBlock) {
    v8f a0{}, a1{}, a2{}, a3{};
    for (std::int64_t j = 0; j < len; ++j) {
      const float* vj = v + j * d + c;
      const v8f w = v8f{} + p[j];
      const v8f m0 = w * load8(vj), m1 = w * load8(vj + 8), m2 = w * load8(vj + 16), m3 = w * load8(vj + 24);
      a0 = a0 + m0;
      a1 = a1 + m1;
      a2 = a2 + m2;
      a3 = a3 + m3;
    }
    std::memcpy(o + c, &a0, sizeof a0);
    std::memcpy(o + c + 8, &a1, sizeof a1);
    std::memcpy(o + c + 16, &a2, sizeof a2);
    std::memcpy(o + c + 24, &a3, sizeof a3);
  }
  for (; c < d; ++c) {
    float acc = 0.0f;
    for (std::int64_t j = 0; j < len; ++j) {
      const float m = p[j] * v[j * d + c];
      acc = acc + m;
    }
    o[c] = acc;
  }
}

}  // namespace

void invariant_attention(const float* q, std::int64_t rows, std::int64_t start, const float* keys, const float* values,
                         std::int64_t capacity, const AttentionShape& s, float* out, std::int64_t held_from) {
  const int group = s.heads / s.kv_heads;
  const std::int64_t d = s.head_dim;
  const std::int64_t width = static_cast<std::int64_t>(s.heads) * d;
  const std::int64_t tasks = rows * s.heads;
  parallel_chunks(tasks, [&](std::int64_t t) {
    const std::int64_t i = t / s.heads;
    const int h = static_cast<int>(t % s.heads);
    const int g = h / group;
    // Causal: positions first .. start + i, first 0 unless a sliding window cuts the older ones off.
    const std::int64_t first = s.window > 0 ? std::max<std::int64_t>(0, start + i + 1 - s.window) : 0;
    const std::int64_t len = start + i + 1 - first;
    const float* qi = q + i * width + h * d;
    const float* kh = keys + (g * capacity + first - held_from) * d;
    const float* vh = values + (g * capacity + first - held_from) * d;
    thread_local std::vector<float> scores;  // each thread's, reused: no allocation per (row, head)
    scores.resize(static_cast<std::size_t>(len));
    float* p = scores.data();
    float m = -INFINITY;
    for (std::int64_t j = 0; j < len; ++j) {
      p[j] = dot(qi, kh + j * d, d) * s.scale;
      m = std::max(m, p[j]);
    }
    float sum = 0.0f;
    for (std::int64_t j = 0; j < len; ++j) {
      p[j] = std::exp(p[j] - m);
      sum = sum + p[j];
    }
    float* o = out + i * width + h * d;
    weighted_sum(p, vh, len, d, o);
    const float inv = 1.0f / sum;
    for (std::int64_t c = 0; c < d; ++c) o[c] = o[c] * inv;
  });
}

}  // namespace tf
