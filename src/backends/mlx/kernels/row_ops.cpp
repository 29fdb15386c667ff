#include "backends/mlx/kernels/row_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/backend.h"
#include "backends/mlx/kernels/chunk_pool.h"
#include "backends/mlx/kernels/lanes8.h"

namespace tf {
namespace {

// Sum of squares in 8 interleaved lanes, the lanes summed in a fixed tree, then the tail in order.
__attribute__((target_clones("avx2", "default"))) float sum_squares(const float* x, std::int64_t n) {
  v8f acc{};
  const std::int64_t n8 = n / 8 * 8;
  for (std::int64_t i = 0; i < n8; i += 8) {
    const v8f v = load8(x + i);
    const v8f sq = v * v;
    acc = acc + sq;
  }
  float s = reduce8(acc);
  for (std::int64_t i = n8; i < n; ++i) {
    const float sq = x[i] * x[i];
    s = s + sq;
  }
  return s;
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// Runs f(begin, end) over [0, n) in fixed spans of `span` on the chunk pool (a decode step's few values stay
// on the calling thread). Each value is computed by the same code whichever thread takes its span.
template <class F>
void over_spans(std::int64_t n, std::int64_t span, F f) {
  const std::int64_t spans = (n + span - 1) / span;
  if (spans <= 1) return f(std::int64_t{0}, n);
  parallel_chunks(spans, [&](std::int64_t c) { f(c * span, std::min(n, (c + 1) * span)); });
}

constexpr std::int64_t kElementSpan = 16384, kRowSpan = 16;

}  // namespace

void rms_norm_rows(const float* x, std::int64_t rows, std::int64_t width, const float* weight, float eps, float* y) {
  over_spans(rows, std::max<std::int64_t>(kRowSpan, kElementSpan / width), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * width;
      float* yr = y + r * width;
      const float inv = 1.0f / std::sqrt(sum_squares(xr, width) / static_cast<float>(width) + eps);
      for (std::int64_t i = 0; i < width; ++i) {
        const float n = xr[i] * inv;
        yr[i] = n * weight[i];
      }
    }
  });
}

void rope_rows(float* x, std::int64_t rows, int heads, int head_dim, std::int64_t start, const RopeSpec& spec,
               const std::int32_t* thw) {
  const int dims = spec.rotary_dims > 0 ? spec.rotary_dims : head_dim;
  const int half = dims / 2;
  // Frequencies as MLX derives them: base^(-2i/dims), or 1 / (base^(2i/dims) * factor_i) with per-pair factors.
  std::vector<float> inv_freq(static_cast<std::size_t>(half));
  for (int i = 0; i < half; ++i) {
    const double period =
        std::pow(static_cast<double>(spec.base), 2.0 * i / dims) *
        (spec.freq_factors.empty() ? 1.0 : static_cast<double>(spec.freq_factors[static_cast<std::size_t>(i)]));
    inv_freq[static_cast<std::size_t>(i)] = static_cast<float>(1.0 / period);
  }
  // Which of a row's (t, h, w) positions each frequency turns with (M-RoPE, interleaved sections).
  std::vector<int> axis(static_cast<std::size_t>(half), 0);
  for (int i = 0; i < half; ++i) {
    if (i % 3 == 1 && i < 3 * spec.mrope_section[1]) axis[static_cast<std::size_t>(i)] = 1;
    if (i % 3 == 2 && i < 3 * spec.mrope_section[2]) axis[static_cast<std::size_t>(i)] = 2;
  }
  over_spans(rows, kRowSpan, [&](std::int64_t r0, std::int64_t r1) {
    std::vector<float> cs(static_cast<std::size_t>(half)), sn(static_cast<std::size_t>(half));
    for (std::int64_t r = r0; r < r1; ++r) {
      for (int i = 0; i < half; ++i) {
        const auto pos =
            static_cast<float>(thw != nullptr ? thw[3 * r + axis[static_cast<std::size_t>(i)]] : start + r);
        const float theta = pos * inv_freq[static_cast<std::size_t>(i)];
        cs[static_cast<std::size_t>(i)] = static_cast<float>(std::cos(static_cast<double>(theta)));
        sn[static_cast<std::size_t>(i)] = static_cast<float>(std::sin(static_cast<double>(theta)));
      }
      for (int h = 0; h < heads; ++h) {
        float* v = x + (r * heads + h) * head_dim;
        for (int i = 0; i < half; ++i) {
          float& a = spec.interleaved ? v[2 * i] : v[i];
          float& b = spec.interleaved ? v[2 * i + 1] : v[i + half];
          const float c = cs[static_cast<std::size_t>(i)], s = sn[static_cast<std::size_t>(i)];
          const float ac = a * c, bs = b * s, as = a * s, bc = b * c;
          a = ac - bs;
          b = as + bc;
        }
      }
    }
  });
}

void add_rows(const float* a, const float* b, std::int64_t n, float* y) {
  over_spans(n, kElementSpan, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) y[i] = a[i] + b[i];
  });
}

void swiglu_rows(const float* gate, const float* up, std::int64_t n, float* y) {
  over_spans(n, kElementSpan, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) {
      const float g = gate[i];
      const float silu = g * sigmoid(g);
      y[i] = silu * up[i];
    }
  });
}

void gelu_tanh_glu_rows(const float* gate, const float* up, std::int64_t n, float* y) {
  over_spans(n, kElementSpan, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) {
      const float g = gate[i];
      const float cube = g * g * g;
      const float inner = 0.7978845608028654f * (g + 0.044715f * cube);  // sqrt(2 / pi)
      const float gelu = 0.5f * g * (1.0f + std::tanh(inner));
      y[i] = gelu * up[i];
    }
  });
}

void sigmoid_gate_rows(const float* x, const float* gate, std::int64_t n, float* y) {
  over_spans(n, kElementSpan, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) y[i] = x[i] * sigmoid(gate[i]);
  });
}

}  // namespace tf
