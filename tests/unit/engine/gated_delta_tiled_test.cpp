// The MLX backend's Gated DeltaNet kernel (kernels/gated_delta.h) with value heads tiled over the key heads, as
// llama.cpp's GGUF files store them: convert_hf_to_gguf moves grouped value head g * R + r (key head g, R value
// heads a key head) to r * K + g. Fed the same inputs reordered that way, the tiled kernel gives the grouped
// kernel's outputs and state in the same order, bit for bit (the arithmetic of a head does not depend on its
// place), and with the flag off it does not (value heads then read the wrong key heads).
#include "backends/mlx/kernels/gated_delta.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace tf {
namespace {

constexpr int K = 2, R = 3, H = K * R, DK = 8, DV = 4, KERNEL = 4;

// The tiled index of grouped value head h.
int tiled(int h) { return (h % R) * K + h / R; }

// `v` holds `count` items of `width` floats starting at `offset`, one per grouped value head; reorder them.
void tile_heads(std::vector<float>& v, std::size_t offset, int width) {
  const std::vector<float> grouped(
      v.begin() + static_cast<std::ptrdiff_t>(offset),
      v.begin() + static_cast<std::ptrdiff_t>(offset + static_cast<std::size_t>(H * width)));
  for (int h = 0; h < H; ++h)
    std::memcpy(v.data() + offset + static_cast<std::size_t>(tiled(h) * width),
                grouped.data() + static_cast<std::size_t>(h * width), static_cast<std::size_t>(width) * 4);
}

TEST(GatedDeltaTiled, TiledValueHeadsGiveTheGroupedResultsReordered) {
  GatedDeltaShape s{K, H, DK, DV, KERNEL, false};
  const auto C = static_cast<std::size_t>(s.channels());
  const std::size_t value_at = static_cast<std::size_t>(2 * K * DK);  // the v channels follow q and k
  const std::int64_t rows = 5;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  const auto random = [&](std::size_t n, float scale) {
    std::vector<float> v(n);
    for (auto& x : v) x = scale * nd(rng);
    return v;
  };
  std::vector<float> qkv = random(static_cast<std::size_t>(rows) * C, 1.0f), a = random(rows * H, 1.0f),
                     b = random(rows * H, 1.0f), conv = random(C * KERNEL, 0.5f), a_log = random(H, 0.5f),
                     dt_bias = random(H, 0.5f), conv_state = random(static_cast<std::size_t>(s.conv_floats()), 1.0f),
                     state = random(static_cast<std::size_t>(s.state_floats()), 0.1f);
  std::vector<float> out(static_cast<std::size_t>(rows * H * DV)), conv_after(conv_state.size()),
      state_after(state.size());
  gated_delta_rows(qkv.data(), a.data(), b.data(), rows, {conv.data(), a_log.data(), dt_bias.data()}, s,
                   conv_state.data(), state.data(), conv_after.data(), state_after.data(), out.data());

  // The same inputs as a GGUF holds them: every per-value-head item moved to its tiled place.
  for (std::int64_t t = 0; t < rows; ++t) {
    tile_heads(qkv, static_cast<std::size_t>(t) * C + value_at, DV);
    tile_heads(a, static_cast<std::size_t>(t * H), 1);
    tile_heads(b, static_cast<std::size_t>(t * H), 1);
  }
  tile_heads(conv, value_at * KERNEL, DV * KERNEL);
  tile_heads(a_log, 0, 1);
  tile_heads(dt_bias, 0, 1);
  for (int j = 0; j < KERNEL - 1; ++j) tile_heads(conv_state, static_cast<std::size_t>(j) * C + value_at, DV);
  tile_heads(state, 0, DK * DV);
  std::vector<float> want_out = out, want_conv = conv_after, want_state = state_after;
  for (std::int64_t t = 0; t < rows; ++t) tile_heads(want_out, static_cast<std::size_t>(t * H * DV), DV);
  for (int j = 0; j < KERNEL - 1; ++j) tile_heads(want_conv, static_cast<std::size_t>(j) * C + value_at, DV);
  tile_heads(want_state, 0, DK * DV);

  for (const bool flag : {true, false}) {
    s.tiled_value_heads = flag;
    std::vector<float> got(out.size()), got_conv(conv_after.size()), got_state(state_after.size());
    gated_delta_rows(qkv.data(), a.data(), b.data(), rows, {conv.data(), a_log.data(), dt_bias.data()}, s,
                     conv_state.data(), state.data(), got_conv.data(), got_state.data(), got.data());
    const bool same = std::memcmp(got.data(), want_out.data(), got.size() * 4) == 0 &&
                      std::memcmp(got_state.data(), want_state.data(), got_state.size() * 4) == 0;
    EXPECT_EQ(same, flag) << (flag ? "tiled heads differ from the grouped ones reordered"
                                   : "the grouped reading of tiled heads should read other key heads");
    EXPECT_EQ(0, std::memcmp(got_conv.data(), want_conv.data(), got_conv.size() * 4));  // the conv has no heads
  }
}

}  // namespace
}  // namespace tf
