#include "backends/mlx/kernels/invariant_matmul.h"

#include "backends/mlx/kernels/chunk_pool.h"
#include "backends/mlx/kernels/lanes8.h"

#include <algorithm>
#include <cstring>

namespace tf {
namespace {

// R rows x 1 column: every accumulator sees exactly the same operations as in the 1-row case.
template <int R>
inline void dot_rows(const float* const* xr, const float* wn, std::int64_t k, float* out) {
  v8f acc[R];
  for (int r = 0; r < R; ++r) acc[r] = v8f{};
  const std::int64_t k8 = k / 8 * 8;
  for (std::int64_t i = 0; i < k8; i += 8) {
    const v8f wv = load8(wn + i);
    for (int r = 0; r < R; ++r) {
      const v8f p = load8(xr[r] + i) * wv;
      acc[r] = acc[r] + p;
    }
  }
  for (int r = 0; r < R; ++r) {
    float s = reduce8(acc[r]);
    for (std::int64_t i = k8; i < k; ++i) {
      const float p = xr[r][i] * wn[i];
      s = s + p;
    }
    out[r] = s;
  }
}

__attribute__((target_clones("avx2", "default"))) void matmul_columns(const float* x, std::int64_t rows, const float* w,
                                                                      std::int64_t n0, std::int64_t n1, std::int64_t k,
                                                                      std::int64_t n_total, float* y) {
  constexpr int kBlock = 4;
  for (std::int64_t m = 0; m < rows; m += kBlock) {
    const int r = static_cast<int>(std::min<std::int64_t>(kBlock, rows - m));
    const float* xr[kBlock];
    for (int i = 0; i < r; ++i) xr[i] = x + (m + i) * k;
    float out[kBlock];
    for (std::int64_t n = n0; n < n1; ++n) {
      const float* wn = w + n * k;
      switch (r) {
        case 4:
          dot_rows<4>(xr, wn, k, out);
          break;
        case 3:
          dot_rows<3>(xr, wn, k, out);
          break;
        case 2:
          dot_rows<2>(xr, wn, k, out);
          break;
        default:
          dot_rows<1>(xr, wn, k, out);
          break;
      }
      for (int i = 0; i < r; ++i) y[(m + i) * n_total + n] = out[i];
    }
  }
}

}  // namespace

void invariant_matmul(const float* x, std::int64_t rows, const float* w, std::int64_t out_features,
                      std::int64_t in_features, float* y) {
  // Columns are split in fixed chunks; which thread computes a column never changes its arithmetic.
  constexpr std::int64_t kChunk = 64;
  const std::int64_t chunks = (out_features + kChunk - 1) / kChunk;
  parallel_chunks(chunks, [&](std::int64_t c) {
    const std::int64_t n0 = c * kChunk, n1 = std::min(out_features, n0 + kChunk);
    matmul_columns(x, rows, w, n0, n1, in_features, out_features, y);
  });
}

}  // namespace tf
