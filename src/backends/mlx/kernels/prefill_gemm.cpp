#include "backends/mlx/kernels/prefill_gemm.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(__APPLE__)
#include <Accelerate/Accelerate.h>
#else
#include <cblas.h>
#endif

#include "backends/mlx/kernels/chunk_pool.h"
#include "backends/mlx/kernels/quantized_matrix.h"

namespace tf {

void dense_gemm(const float* x, std::int64_t rows, const float* w, std::int64_t out_features, std::int64_t in_features,
                float* y) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows), static_cast<int>(out_features),
              static_cast<int>(in_features), 1.0f, x, static_cast<int>(in_features), w, static_cast<int>(in_features),
              0.0f, y, static_cast<int>(out_features));
}

void quantized_gemm(const float* x, std::int64_t rows, const QuantizedMatrix& w, float* y) {
  // The weight is dequantized a tile of rows at a time, so each tile is decoded once for every row of the
  // chunk. Tiles of about 16 MB of float32 (a few hundred to a few thousand weight rows): large enough for sgemm's
  // blocking, small enough to stay in the last-level cache's neighbourhood and in bounded memory.
  constexpr std::int64_t kTileFloats = 4 << 20, kDequantRows = 16;
  const std::int64_t tile_rows =
      std::clamp<std::int64_t>(kTileFloats / w.cols / kDequantRows * kDequantRows, kDequantRows, w.rows);
  thread_local std::vector<float> scratch, quantized_x;
  std::vector<float>& tile = scratch;  // the calling thread's, also inside the pool's helpers
  tile.resize(static_cast<std::size_t>(tile_rows * w.cols));
  // Where the decode rows quantize activations (quantized_matrix.h), the chunk multiplies the same quantized
  // values: prefill and decode rows then compute one model and differ only in the order of float sums.
  quantized_x.resize(static_cast<std::size_t>(rows * w.cols));
  if (activations_as_products_see_them(x, rows, w, quantized_x.data())) x = quantized_x.data();
  for (std::int64_t first = 0; first < w.rows; first += tile_rows) {
    const std::int64_t n = std::min(tile_rows, w.rows - first);
    parallel_chunks((n + kDequantRows - 1) / kDequantRows, [&](std::int64_t c) {
      const std::int64_t r0 = c * kDequantRows;
      dequantize_for_gemm(w, first + r0, std::min(kDequantRows, n - r0), tile.data() + r0 * w.cols);
    });
    // y[:, first .. first + n) = x [rows, cols] times tile^T [cols, n]
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows), static_cast<int>(n),
                static_cast<int>(w.cols), 1.0f, x, static_cast<int>(w.cols), tile.data(), static_cast<int>(w.cols),
                0.0f, y + first, static_cast<int>(w.rows));
  }
}

}  // namespace tf
