#pragma once
// The tiled layout of affine 4- and 8-bit codes on the device (the decode matmul's tensor-core fragments).
//
// MLX stores a weight row as one LSB-first bitstream of uint32 words. The decode kernel feeds the codes to
// mma.m16n8k16 as the A operand: lane L of a warp needs rows L/4 and L/4 + 8 of a 16-row tile. The tiled
// layout moves whole words (never bits within a word) so that one 16-byte load per lane brings exactly what
// the lane needs for two "units" (a unit is 4 consecutive words of a row: 32 codes of 4 bits or 16 of 8):
//   tile t = n / 16, row-in-tile rr = n % 16; unit u = w / 4, word-in-unit j = w % 4;
//   lane = 4 * (rr % 8) + j, half = rr / 8; pair p = u / 2, sub = u % 2;
//   index = ((t * (words_per_row / 8) + p) * 32 + lane) * 4 + 2 * sub + half.
// Rows are padded to a multiple of 16 with zero codes. Every reader of a tiled weight (decode, prefill,
// embedding lookup) finds word w of row n through tiled_word_index, so the layout has one definition.
#include <cstdint>
#include <vector>

#ifdef __CUDACC__
#define TF_HOST_DEVICE __host__ __device__
#else
#define TF_HOST_DEVICE
#endif

namespace tf::cuda {

constexpr int kTileRows = 16;

TF_HOST_DEVICE inline std::int64_t tiled_word_index(std::int64_t n, std::int64_t w, std::int64_t words_per_row) {
  const std::int64_t tile = n >> 4;
  const int rr = static_cast<int>(n & 15);
  const std::int64_t unit = w >> 2;
  const int j = static_cast<int>(w & 3);
  const int lane = ((rr & 7) << 2) | j;
  return ((tile * (words_per_row >> 3) + (unit >> 1)) * 32 + lane) * 4 + 2 * (unit & 1) + (rr >> 3);
}

// The tiled copy of a weight's scales and biases (the integer kernel's): element j of row r (r = 0..7) of
// tile t at group g, j = 0..3 being (s, b) of row 16t + r then (s, b) of row 16t + r + 8, in units of the
// scale type. One group of one tile is 32 elements; a tile's groups follow each other.
constexpr int kTiledScaleGroupElems = 32;
TF_HOST_DEVICE inline std::int64_t tiled_scale_index(std::int64_t tile, std::int64_t g, int r, int j,
                                                     std::int64_t groups_per_row) {
  return ((tile * groups_per_row + g) * 8 + r) * 4 + j;
}

// Whether a weight of this format can be tiled: 4 or 8 bits, groups of 32, 64 or 128, whole 8-word steps.
// 2-bit codes never are: they stay in MLX's layout, read only by the SIMT kernels.
inline bool tileable(int bits, int group, std::int64_t cols) {
  if ((bits != 4 && bits != 8) || (group != 32 && group != 64 && group != 128) || cols % group != 0) return false;
  return (cols * bits / 32) % 8 == 0;
}

// Rows padded to whole tiles.
inline std::int64_t tiled_rows(std::int64_t rows) { return (rows + kTileRows - 1) / kTileRows * kTileRows; }

// MLX-layout words [rows, words_per_row] -> the tiled layout (tiled_rows(rows) rows, padding zero).
inline std::vector<std::uint32_t> tile_words(const std::uint32_t* words, std::int64_t rows, std::int64_t words_per_row) {
  std::vector<std::uint32_t> out(static_cast<std::size_t>(tiled_rows(rows) * words_per_row), 0u);
  for (std::int64_t n = 0; n < rows; ++n)
    for (std::int64_t w = 0; w < words_per_row; ++w)
      out[static_cast<std::size_t>(tiled_word_index(n, w, words_per_row))] = words[n * words_per_row + w];
  return out;
}

}  // namespace tf::cuda
