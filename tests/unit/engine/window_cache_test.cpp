// The sliding-window store (HostWindowCache): attention over it equals attention over a full cache with the
// window as a mask, bit for bit, through growth, the moves that drop positions no row attends, calls longer than
// the planned ones, rollbacks inside the last call and snapshot/restore; and it holds a fixed size.
#include "backends/mlx/host_window_cache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "backends/mlx/host_kv_cache.h"
#include "backends/mlx/kernels/invariant_attention.h"

namespace tf {
namespace {

constexpr int kLayers = 2, kHeads = 4, kKvHeads = 2, kDim = 8, kWindow = 7;
constexpr std::int64_t kCallRows = 16;

std::vector<float> randn(std::size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Both stores side by side: every call writes the same rows to both and attends over each.
struct Pair {
  HostKvCache full{kLayers, kKvHeads, kDim};
  HostWindowCache window{kLayers, kKvHeads, kDim, kWindow, kCallRows};
  std::mt19937 rng{7};

  // One call of `rows` rows at the stores' length; every layer's output must agree bit for bit.
  void call(std::int64_t rows) {
    const std::int64_t start = window.length();
    ASSERT_EQ(start, full.length());
    const AttentionShape shape{kHeads, kKvHeads, kDim, 0.3f, kWindow};
    for (int layer = 0; layer < kLayers; ++layer) {
      const auto q = randn(static_cast<std::size_t>(rows * kHeads * kDim), rng);
      const auto k = randn(static_cast<std::size_t>(rows * kKvHeads * kDim), rng), v = randn(k.size(), rng);
      std::vector<float> want(q.size()), got(q.size());
      full.write(layer, k.data(), v.data(), rows, start);
      invariant_attention(q.data(), rows, start, full.keys(layer), full.values(layer), full.capacity(layer), shape,
                          want.data());
      window.write(layer, k.data(), v.data(), rows, start);
      invariant_attention(q.data(), rows, start, window.keys(layer), window.values(layer), window.capacity(layer),
                          shape, got.data(), window.held_from(layer));
      ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
          << "layer " << layer << ", rows " << start << ".." << start + rows - 1;
    }
    ASSERT_EQ(window.length(), start + rows);
  }
  void truncate(std::int64_t length) {
    full.truncate(length);
    window.truncate(length);
  }
};

TEST(WindowCache, AttendsAsAFullCacheMaskedToTheWindow) {
  Pair p;
  p.call(5);  // shorter than the window
  p.call(kCallRows);
  for (int step = 0; step < 300; ++step) {  // decode steps and verify windows rolled back inside themselves
    if (step % 7 == 3) {
      const std::int64_t before = p.window.length();
      p.call(6);
      p.truncate(before + step % 5);
    } else {
      p.call(1);
    }
  }
  p.call(3 * kCallRows + 5);  // a call longer than the planned ones grows the store for itself
  for (int step = 0; step < 40; ++step) p.call(step % 2 ? 1 : kCallRows);
  EXPECT_GT(p.window.length(), 350);
}

TEST(WindowCache, HoldsAFixedSize) {
  Pair p;
  for (int i = 0; i < 50; ++i) p.call(kCallRows);
  const std::size_t steady = HostWindowCache::steady_bytes(kLayers, kKvHeads, kDim, kWindow, kCallRows);
  EXPECT_EQ(steady, static_cast<std::size_t>(kLayers) * 2 * kKvHeads * kDim * (kWindow - 1 + kCallRows) * 4);
  EXPECT_EQ(p.window.bytes(), steady);
  for (int i = 0; i < 500; ++i) p.call(1);
  EXPECT_EQ(p.window.bytes(), steady);
  EXPECT_LT(p.window.bytes() * 10, p.full.bytes());
}

TEST(WindowCache, RefusesToRollBackPastWhatItKeeps) {
  Pair p;
  for (int i = 0; i < 10; ++i) p.call(kCallRows);
  const std::int64_t end = p.window.length();
  EXPECT_THROW(p.window.truncate(end - kCallRows - kWindow), std::logic_error);
  EXPECT_EQ(p.window.length(), end);
  p.truncate(end - kCallRows);  // the start of the last call: allowed
  p.call(2);
}

TEST(WindowCache, SnapshotRestoresAStoreThatContinuesExactly) {
  Pair p;
  for (int i = 0; i < 6; ++i) p.call(kCallRows - 3);
  const auto bytes = p.window.snapshot();
  // Only the last window - 1 positions travel.
  EXPECT_EQ(bytes.size(), 16u + static_cast<std::size_t>(kLayers) * 2 * kKvHeads * kDim * (kWindow - 1) * 4);
  Pair q;
  q.window.restore(bytes);
  q.full.restore(p.full.snapshot());
  EXPECT_EQ(q.window.length(), p.window.length());
  for (int i = 0; i < 30; ++i) q.call(i % 3 ? 1 : 9);
  // The restored store snapshots to the same bytes as one that ran the same calls.
  HostWindowCache r(kLayers, kKvHeads, kDim, kWindow, kCallRows);
  EXPECT_THROW(r.restore(std::vector<std::uint8_t>(bytes.begin(), bytes.end() - 4)), std::invalid_argument);
  r.restore(q.window.snapshot());
  EXPECT_EQ(r.snapshot(), q.window.snapshot());
  // A stream shorter than the window snapshots all its positions.
  HostWindowCache s(kLayers, kKvHeads, kDim, kWindow, kCallRows);
  Pair shortp;
  shortp.call(3);
  s.restore(shortp.window.snapshot());
  EXPECT_EQ(s.length(), 3);
}

}  // namespace
}  // namespace tf
