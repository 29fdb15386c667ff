#include "backends/mlx/kernels/mamba2_scan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/mlx/kernels/chunk_pool.h"
#include "backends/mlx/kernels/lanes8.h"

namespace tf {
namespace {

float silu(float x) { return x / (1.0f + std::exp(-x)); }

// torch's softplus (beta 1, threshold 20): x itself above the threshold, where log1p(exp(x)) == x in float.
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// Rows are convolved this many at a time, then each head runs them all with its state in cache: the state
// (head_dim x state_size floats a head, 32 KiB at Nemotron's 64 x 128) stays in L1 for the block instead of
// the whole layer's (2 MiB) streaming through the cache on every row.
constexpr std::int64_t kRowBlock = 64;

// One head over `rows` rows: S = S * exp(dt A) + (dt B) x, y = C . S + D x, for each of its head_dim state
// rows. Each state row is 8 lanes over the state index n (products rounded, then added: never fused); y's dot
// product sums lane-wise in n order, then the fixed lane tree, then the tail. Nothing depends on which rows,
// blocks or threads share the call, so prefill, decode and verify rows give the same bits.
__attribute__((target_clones("avx2", "default"))) void head_rows(const float* ys, std::int64_t ys_stride,
                                                                 const float* dt, std::int64_t dt_stride,
                                                                 std::int64_t rows, int h, const Mamba2Weights& w,
                                                                 const Mamba2Spec& s, float* S_head, float* out,
                                                                 std::int64_t out_stride) {
  const int P = s.head_dim, N = s.state_size, N8 = N / 8 * 8;
  const int g = h / (s.heads / s.groups);
  const std::int64_t inner = s.inner();
  const float neg_a = -std::exp(w.a_log[h]);
  std::vector<float> dB(static_cast<std::size_t>(N));
  for (std::int64_t t = 0; t < rows; ++t) {
    const float* y = ys + t * ys_stride;
    const float* x = y + static_cast<std::ptrdiff_t>(h) * P;
    const float* Bg = y + inner + static_cast<std::ptrdiff_t>(g) * N;
    const float* Cg = y + inner + static_cast<std::int64_t>(s.groups) * N + static_cast<std::ptrdiff_t>(g) * N;
    const float step = std::min(std::max(softplus(dt[t * dt_stride + h] + w.dt_bias[h]), s.dt_min), s.dt_max);
    const float decay = std::exp(step * neg_a);
    for (int n = 0; n < N; ++n) dB[static_cast<std::size_t>(n)] = step * Bg[n];
    const v8f decay8 = v8f{} + decay;
    float* o = out + t * out_stride + static_cast<std::ptrdiff_t>(h) * P;
    for (int p = 0; p < P; ++p) {
      const float xv = x[p];
      const v8f x8 = v8f{} + xv;
      float* S = S_head + static_cast<std::ptrdiff_t>(p) * N;
      v8f acc{};
      for (int n = 0; n < N8; n += 8) {
        const v8f kept = load8(S + n) * decay8, added = load8(dB.data() + n) * x8;
        const v8f sn = kept + added;
        store8(S + n, sn);
        const v8f prod = sn * load8(Cg + n);
        acc = acc + prod;
      }
      float sum = reduce8(acc);
      for (int n = N8; n < N; ++n) {
        const float kept = S[n] * decay, added = dB[static_cast<std::size_t>(n)] * xv;
        S[n] = kept + added;
        const float prod = S[n] * Cg[n];
        sum = sum + prod;
      }
      const float skip = xv * w.d[h];
      o[p] = sum + skip;
    }
  }
}

}  // namespace

void mamba2_rows(const float* xbc, const float* dt, std::int64_t rows, const Mamba2Weights& w, const Mamba2Spec& s,
                 const float* state_in, float* state_out, float* out) {
  const std::int64_t C = s.conv_channels(), inner = s.inner(), conv_floats = mamba2_conv_floats(s);
  const int K = s.conv_kernel;
  const std::int64_t head_floats = static_cast<std::int64_t>(s.head_dim) * s.state_size;
  // The conv window: the last K - 1 inputs, oldest first, then the current one.
  std::vector<float> window(static_cast<std::size_t>(K * C));
  std::memcpy(window.data(), state_in, static_cast<std::size_t>(conv_floats) * 4);
  float* S_all = state_out + conv_floats;
  if (state_out != state_in)
    std::memcpy(S_all, state_in + conv_floats, static_cast<std::size_t>(inner * s.state_size) * 4);
  std::vector<float> ys(static_cast<std::size_t>(std::min(rows, kRowBlock) * C));
  for (std::int64_t t0 = 0; t0 < rows; t0 += kRowBlock) {
    const std::int64_t nb = std::min(kRowBlock, rows - t0);
    for (std::int64_t t = 0; t < nb; ++t) {  // the causal conv and SiLU of x, B and C
      std::memcpy(window.data() + (K - 1) * C, xbc + (t0 + t) * C, static_cast<std::size_t>(C) * 4);
      float* y = ys.data() + t * C;
      for (std::int64_t c = 0; c < C; ++c) {
        float acc = 0.0f;
        for (int j = 0; j < K; ++j) acc = acc + w.conv[c * K + j] * window[static_cast<std::size_t>(j * C + c)];
        if (w.conv_bias != nullptr) acc = acc + w.conv_bias[c];
        y[c] = silu(acc);
      }
      std::memmove(window.data(), window.data() + C, static_cast<std::size_t>((K - 1) * C) * 4);
    }
    // Heads are independent: one chunk each (which thread runs a head changes none of its bits).
    parallel_chunks(s.heads, [&](std::int64_t h) {
      head_rows(ys.data(), C, dt + t0 * s.heads, s.heads, nb, static_cast<int>(h), w, s, S_all + h * head_floats,
                out + t0 * inner, inner);
    });
  }
  std::memcpy(state_out, window.data(), static_cast<std::size_t>(conv_floats) * 4);
}

}  // namespace tf
