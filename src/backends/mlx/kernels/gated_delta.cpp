#include "backends/mlx/kernels/gated_delta.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace tf {
namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// torch's softplus (beta 1, threshold 20): x itself above the threshold, where log1p(exp(x)) == x in float.
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// x * (sum x^2 + 1e-6)^-1/2 over one head (the FLA / transformers l2norm), then times `scale`.
void l2_normalize(float* x, int n, float scale) {
  float ss = 0.0f;
  for (int i = 0; i < n; ++i) ss = ss + x[i] * x[i];
  const float inv = 1.0f / std::sqrt(ss + 1e-6f);
  for (int i = 0; i < n; ++i) x[i] = x[i] * inv * scale;
}

}  // namespace

void gated_delta_rows(const float* qkv, const float* a, const float* b, std::int64_t rows, const GatedDeltaWeights& w,
                      const GatedDeltaShape& s, const float* conv_in, const float* state_in, float* conv_out,
                      float* state_out, float* out) {
  const std::int64_t C = s.channels();
  const int K = s.conv_kernel, dk = s.k_dim, dv = s.v_dim;
  const std::int64_t key_width = static_cast<std::int64_t>(s.k_heads) * dk;
  const int group = s.v_heads / s.k_heads;  // value heads per key head
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(dk));
  // The conv window: the last K - 1 inputs, oldest first, then the current one.
  std::vector<float> window(static_cast<std::size_t>(K) * static_cast<std::size_t>(C));
  std::memcpy(window.data(), conv_in, static_cast<std::size_t>(s.conv_floats()) * 4);
  if (state_out != state_in) std::memcpy(state_out, state_in, static_cast<std::size_t>(s.state_floats()) * 4);
  std::vector<float> y(static_cast<std::size_t>(C)), kv_mem(static_cast<std::size_t>(dv)),
      delta(static_cast<std::size_t>(dv));
  std::vector<float> decay(static_cast<std::size_t>(dk));
  for (std::int64_t t = 0; t < rows; ++t) {
    std::memcpy(window.data() + static_cast<std::size_t>((K - 1) * C), qkv + t * C, static_cast<std::size_t>(C) * 4);
    for (std::int64_t c = 0; c < C; ++c) {
      float acc = 0.0f;
      for (int j = 0; j < K; ++j) acc = acc + w.conv[c * K + j] * window[static_cast<std::size_t>(j * C + c)];
      y[static_cast<std::size_t>(c)] = acc * sigmoid(acc);  // SiLU
    }
    std::memmove(window.data(), window.data() + C, static_cast<std::size_t>((K - 1) * C) * 4);
    float* q = y.data();
    float* k = y.data() + key_width;
    const float* v = y.data() + 2 * key_width;
    for (int h = 0; h < s.k_heads; ++h) {
      l2_normalize(q + static_cast<std::ptrdiff_t>(h) * dk, dk, q_scale);
      l2_normalize(k + static_cast<std::ptrdiff_t>(h) * dk, dk, 1.0f);
    }
    for (int h = 0; h < s.v_heads; ++h) {
      const int key_head = s.tiled_value_heads ? h % s.k_heads : h / group;
      const float* qh = q + static_cast<std::ptrdiff_t>(key_head) * dk;
      const float* kh = k + static_cast<std::ptrdiff_t>(key_head) * dk;
      const float* vh = v + static_cast<std::ptrdiff_t>(h) * dv;
      const float beta = sigmoid(b[t * s.v_heads + h]);
      if (s.channel_decay) {
        // One decay per key channel: log-decay g = bound * sigmoid(exp(a_log) * (a + dt_bias)) with a lower
        // bound, else -exp(a_log) * softplus(a + dt_bias).
        const float rate = std::exp(w.a_log[h]);
        const std::int64_t at = static_cast<std::int64_t>(h) * dk;
        for (int i = 0; i < dk; ++i) {
          const float x = a[t * s.v_heads * dk + at + i] + w.dt_bias[at + i];
          const float g = s.decay_lower_bound < 0.0f ? s.decay_lower_bound * sigmoid(rate * x) : -rate * softplus(x);
          decay[static_cast<std::size_t>(i)] = std::exp(g);
        }
      } else {
        const float d = std::exp(-std::exp(w.a_log[h]) * softplus(a[t * s.v_heads + h] + w.dt_bias[h]));
        for (int i = 0; i < dk; ++i) decay[static_cast<std::size_t>(i)] = d;
      }
      float* S = state_out + static_cast<std::ptrdiff_t>(h) * dk * dv;  // [dk, dv]
      for (int j = 0; j < dv; ++j) kv_mem[static_cast<std::size_t>(j)] = 0.0f;
      for (int i = 0; i < dk; ++i) {
        float* row = S + static_cast<std::ptrdiff_t>(i) * dv;
        for (int j = 0; j < dv; ++j) {
          row[j] = row[j] * decay[static_cast<std::size_t>(i)];
          kv_mem[static_cast<std::size_t>(j)] = kv_mem[static_cast<std::size_t>(j)] + row[j] * kh[i];
        }
      }
      for (int j = 0; j < dv; ++j)
        delta[static_cast<std::size_t>(j)] = (vh[j] - kv_mem[static_cast<std::size_t>(j)]) * beta;
      float* o = out + t * static_cast<std::int64_t>(s.v_heads) * dv + static_cast<std::ptrdiff_t>(h) * dv;
      for (int j = 0; j < dv; ++j) o[j] = 0.0f;
      for (int i = 0; i < dk; ++i) {
        float* row = S + static_cast<std::ptrdiff_t>(i) * dv;
        for (int j = 0; j < dv; ++j) {
          row[j] = row[j] + kh[i] * delta[static_cast<std::size_t>(j)];
          o[j] = o[j] + row[j] * qh[i];
        }
      }
    }
  }
  std::memcpy(conv_out, window.data(), static_cast<std::size_t>(s.conv_floats()) * 4);
}

}  // namespace tf
