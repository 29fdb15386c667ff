// Slices of host weights (checkpoint/weight_slice.h), what tensor parallelism hands each rank: every value of
// a slice equals the value at the same place of the whole weight, for dense, affine (2, 3, 4 and 8 bits) and
// GGUF-block weights; regrouping keeps every affine value; cuts inside a group or block are refused.
#include "checkpoint/weight_slice.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "checkpoint/ggml_types.h"
#include "checkpoint/mlx_affine.h"

namespace tf {
namespace {

HostWeight random_affine(std::int64_t rows, std::int64_t cols, int bits, int group, std::uint32_t seed) {
  std::mt19937 rng(seed);
  HostWeight w;
  w.name = "w";
  w.rows = rows;
  w.cols = cols;
  w.shape = {rows, cols};
  w.bits = bits;
  w.group_size = group;
  w.dtype = HostDType::F32;
  w.data.resize(static_cast<std::size_t>(rows * cols * bits / 8));
  for (auto& b : w.data) b = static_cast<std::uint8_t>(rng());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const auto groups = static_cast<std::size_t>(rows * cols / group);
  for (auto* v : {&w.scales, &w.biases}) {
    v->resize(groups * 4);
    for (std::size_t i = 0; i < groups; ++i) {
      const float f = u(rng);
      std::memcpy(v->data() + 4 * i, &f, 4);
    }
  }
  return w;
}

std::vector<float> values(const HostWeight& w) {
  std::vector<float> out(static_cast<std::size_t>(w.rows * w.cols));
  if (w.bits == 0) {
    std::memcpy(out.data(), w.data.data(), out.size() * 4);
    return out;
  }
  std::vector<std::uint32_t> packed(w.data.size() / 4);
  std::memcpy(packed.data(), w.data.data(), w.data.size());
  dequantize_affine(packed, w.scales, w.biases, AffineFloat::F32, static_cast<std::size_t>(w.rows),
                    static_cast<std::size_t>(w.cols), AffineSpec{w.bits, w.group_size}, out);
  return out;
}

float at(const std::vector<float>& v, std::int64_t cols, std::int64_t r, std::int64_t c) {
  return v[static_cast<std::size_t>(r * cols + c)];
}

TEST(WeightSlice, AffineRowsAndColumnsKeepEveryValue) {
  for (int bits : {2, 3, 4, 8}) {
    const HostWeight w = random_affine(12, 256, bits, 64, static_cast<std::uint32_t>(bits));
    const auto whole = values(w);
    const std::vector<std::pair<std::int64_t, std::int64_t>> ranges{{2, 5}, {9, 12}};
    const HostWeight rows = take_rows(w, ranges);
    ASSERT_EQ(rows.rows, 6);
    const auto rv = values(rows);
    for (std::int64_t i = 0; i < 6; ++i)
      for (std::int64_t c = 0; c < 256; ++c)
        ASSERT_EQ(at(rv, 256, i, c), at(whole, 256, i < 3 ? 2 + i : 6 + i, c)) << bits;
    const HostWeight cols = take_columns(w, 128, 256);
    ASSERT_EQ(cols.cols, 128);
    const auto cv = values(cols);
    for (std::int64_t r = 0; r < 12; ++r)
      for (std::int64_t c = 0; c < 128; ++c) ASSERT_EQ(at(cv, 128, r, c), at(whole, 256, r, 128 + c)) << bits;
  }
}

TEST(WeightSlice, RegroupKeepsValuesAndLetsACutFallInsideAnOldGroup) {
  const HostWeight w = random_affine(4, 256, 4, 128, 5);
  const auto whole = values(w);
  EXPECT_THROW(take_columns(w, 0, 64), std::invalid_argument);
  const HostWeight g = regroup(w, 64);
  EXPECT_EQ(g.group_size, 64);
  EXPECT_EQ(values(g), whole);
  const auto cv = values(take_columns(g, 64, 192));
  for (std::int64_t r = 0; r < 4; ++r)
    for (std::int64_t c = 0; c < 128; ++c) ASSERT_EQ(at(cv, 128, r, c), at(whole, 256, r, 64 + c));
}

TEST(WeightSlice, DenseVectorsAreCutAlongTheirValues) {
  HostWeight v;
  v.name = "a_log";
  v.rows = 1;
  v.cols = 8;
  v.shape = {8};
  v.dtype = HostDType::F32;
  std::vector<float> x{0, 1, 2, 3, 4, 5, 6, 7};
  v.data.resize(32);
  std::memcpy(v.data.data(), x.data(), 32);
  const std::vector<std::pair<std::int64_t, std::int64_t>> ranges{{1, 3}, {6, 8}};
  const HostWeight part = take_rows(v, ranges);
  ASSERT_EQ(part.shape, (std::vector<std::int64_t>{4}));
  EXPECT_EQ(values(part), (std::vector<float>{1, 2, 6, 7}));
}

TEST(WeightSlice, GgufBlocksAreCutWholeOrRefused) {
  HostWeight w;
  w.name = "blk.0.ffn_down.weight";
  w.rows = 3;
  w.cols = 64;
  w.shape = {3, 64};
  w.block_type = GgmlType::Q8_0;  // 34 bytes per 32 values
  w.group_size = 32;
  w.bits = 8;
  w.data.resize(3 * 2 * 34);
  for (std::size_t i = 0; i < w.data.size(); ++i) w.data[i] = static_cast<std::uint8_t>(i);
  const HostWeight right = take_columns(w, 32, 64);
  ASSERT_EQ(right.data.size(), 3u * 34u);
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t b = 0; b < 34; ++b) ASSERT_EQ(right.data[r * 34 + b], w.data[r * 68 + 34 + b]);
  const std::vector<std::pair<std::int64_t, std::int64_t>> second{{1, 2}};
  const HostWeight row = take_rows(w, second);
  EXPECT_EQ(std::vector<std::uint8_t>(w.data.begin() + 68, w.data.begin() + 136), row.data);
  try {
    take_columns(w, 0, 16);
    FAIL() << "a cut inside a block";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.ffn_down.weight"), std::string::npos);
  }
}

}  // namespace
}  // namespace tf
