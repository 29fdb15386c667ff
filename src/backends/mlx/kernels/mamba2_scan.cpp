#include "backends/mlx/kernels/mamba2_scan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace tf {
namespace {

float silu(float x) { return x / (1.0f + std::exp(-x)); }

// torch's softplus (beta 1, threshold 20): x itself above the threshold, where log1p(exp(x)) == x in float.
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

}  // namespace

void mamba2_rows(const float* xbc, const float* dt, std::int64_t rows, const Mamba2Weights& w, const Mamba2Spec& s,
                 const float* state_in, float* state_out, float* out) {
  const std::int64_t C = s.conv_channels(), inner = s.inner(), conv_floats = mamba2_conv_floats(s);
  const int K = s.conv_kernel, P = s.head_dim, N = s.state_size;
  const int heads_per_group = s.heads / s.groups;
  // The conv window: the last K - 1 inputs, oldest first, then the current one.
  std::vector<float> window(static_cast<std::size_t>(K * C));
  std::memcpy(window.data(), state_in, static_cast<std::size_t>(conv_floats) * 4);
  float* S_all = state_out + conv_floats;
  if (state_out != state_in) std::memcpy(S_all, state_in + conv_floats, static_cast<std::size_t>(inner * N) * 4);
  std::vector<float> y(static_cast<std::size_t>(C)), dB(static_cast<std::size_t>(N));
  for (std::int64_t t = 0; t < rows; ++t) {
    std::memcpy(window.data() + (K - 1) * C, xbc + t * C, static_cast<std::size_t>(C) * 4);
    for (std::int64_t c = 0; c < C; ++c) {
      float acc = 0.0f;
      for (int j = 0; j < K; ++j) acc = acc + w.conv[c * K + j] * window[static_cast<std::size_t>(j * C + c)];
      if (w.conv_bias != nullptr) acc = acc + w.conv_bias[c];
      y[static_cast<std::size_t>(c)] = silu(acc);
    }
    std::memmove(window.data(), window.data() + C, static_cast<std::size_t>((K - 1) * C) * 4);
    const float* x = y.data();
    const float* B = y.data() + inner;
    const float* Cm = B + static_cast<std::int64_t>(s.groups) * N;
    float* o = out + t * inner;
    for (int h = 0; h < s.heads; ++h) {
      const int g = h / heads_per_group;
      const float* Bg = B + static_cast<std::ptrdiff_t>(g) * N;
      const float* Cg = Cm + static_cast<std::ptrdiff_t>(g) * N;
      const float step = std::min(std::max(softplus(dt[t * s.heads + h] + w.dt_bias[h]), s.dt_min), s.dt_max);
      const float decay = std::exp(step * -std::exp(w.a_log[h]));
      for (int n = 0; n < N; ++n) dB[static_cast<std::size_t>(n)] = step * Bg[n];
      for (int p = 0; p < P; ++p) {
        const float xv = x[static_cast<std::ptrdiff_t>(h) * P + p];
        float* S = S_all + (static_cast<std::ptrdiff_t>(h) * P + p) * N;
        float acc = 0.0f;
        for (int n = 0; n < N; ++n) {
          S[n] = S[n] * decay + dB[static_cast<std::size_t>(n)] * xv;
          acc = acc + S[n] * Cg[n];
        }
        o[static_cast<std::ptrdiff_t>(h) * P + p] = acc + xv * w.d[h];
      }
    }
  }
  std::memcpy(state_out, window.data(), static_cast<std::size_t>(conv_floats) * 4);
}

}  // namespace tf
