// Latent attention with a KPool indexer (blocks/mla.h, blocks/kpool_indexer.h) on the MLX CPU backend, random
// weights: a layer with its own indexer and one sharing its choices, over 30 positions (pools of 2, 2 pools kept,
// so from position 5 on the indexer drops pools). A row's output is the same bits whatever rows share its call
// (up to the backend's invariant size): one row a call, 16, uneven calls, and verify windows rolled back; the
// shared layer attends exactly what the own-indexer layer chose; and the choices do drop pools.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backends/mlx/mlx_backend.h"
#include "blocks/host_row_log.h"
#include "blocks/mla.h"

namespace tf {
namespace {

constexpr std::int64_t kHidden = 16, kRows = 30;

std::vector<float> randn(std::size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = scale * d(rng);
  return v;
}

DeviceWeight upload(Backend& b, const std::vector<float>& v, std::int64_t rows, std::int64_t cols) {
  HostWeight w;
  w.name = "test";
  w.rows = rows;
  w.cols = cols;
  w.shape = rows == 1 ? std::vector<std::int64_t>{cols} : std::vector<std::int64_t>{rows, cols};
  w.dtype = HostDType::F32;
  w.data.resize(v.size() * 4);
  std::memcpy(w.data.data(), v.data(), w.data.size());
  return b.upload(w);
}

class Mla : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(58);
    MlaConfig c;
    c.hidden = kHidden;
    c.heads = 2;
    c.q_rank = 8;
    c.kv_rank = 8;
    c.nope_dim = 4;
    c.v_dim = 4;
    c.indexer = {kHidden, 8, 2, 4, 2, 4};  // 2 heads of 4, pools of 2, top 4 tokens: 2 pools
    Backend& b = *backend_;
    const auto w = [&](std::int64_t rows, std::int64_t cols, float scale) {
      return upload(b, randn(static_cast<std::size_t>(rows * cols), rng, scale), rows, cols);
    };
    const auto ones = [&](std::int64_t n) {
      return upload(b, std::vector<float>(static_cast<std::size_t>(n), 1.0f), 1, n);
    };
    for (int l = 0; l < 2; ++l) {
      MlaBlock& m = layers_[l];
      m.cfg = c;
      m.cfg.selection = l == 0 ? MlaConfig::Selection::Own : MlaConfig::Selection::Shared;
      m.cfg.shared_from = 0;
      m.q_a = w(8, kHidden, 0.3f);
      m.q_a_norm = ones(8);
      m.q_b = w(8, 8, 0.5f);
      m.kv_a = w(8, kHidden, 0.3f);
      m.kv_a_norm = ones(8);
      m.kv_b = randn(2 * 8 * 8, rng, 0.5f);
      m.o = w(kHidden, 8, 0.3f);
    }
    KpoolIndexer& ix = layers_[0].indexer.emplace();
    ix.cfg = c.indexer;
    ix.wq_b = w(8, 8, 0.5f);
    ix.wk = w(4, kHidden, 0.5f);
    ix.weights_proj = w(2, kHidden, 0.5f);
    ix.compress_gate = w(4, kHidden, 0.5f);
    ix.k_norm_weight = std::vector<float>(4, 1.0f);
    ix.k_norm_bias = randn(4, rng, 0.1f);
    ix.ape = randn(8, rng, 0.5f);
    x_ = randn(static_cast<std::size_t>(kRows * kHidden), rng, 1.0f);
  }

  HostRowLog new_log() const {
    return HostRowLog(std::vector<std::int64_t>{layers_[0].log_width(), layers_[1].log_width()});
  }

  // Both layers' outputs for rows [start, start + n) of x_, appended to `out`.
  void run(HostRowLog& log, std::int64_t start, std::int64_t n, std::vector<float>& out) {
    Backend& b = *backend_;
    const StreamRows r{nullptr, start, n, nullptr, nullptr, &log, {}, {}};
    const Tensor h = b.from_host(std::span<const float>(x_).subspan(static_cast<std::size_t>(start * kHidden),
                                                                    static_cast<std::size_t>(n * kHidden)),
                                 n, kHidden);
    for (const auto& m : layers_) {
      const auto y = b.to_host(m.forward(b, h, std::span<const StreamRows>(&r, 1), static_cast<int>(&m - layers_)));
      out.insert(out.end(), y.begin(), y.end());
    }
  }
  // Every row's outputs, one call per entry of `calls` (repeated), in position order: [row][layer][hidden].
  std::vector<float> by_calls(const std::vector<std::int64_t>& calls, bool reject = false) {
    HostRowLog log = new_log();
    std::vector<float> rows;
    std::int64_t at = 0;
    for (std::size_t i = 0; at < kRows; ++i) {
      const std::int64_t n = std::min(calls[i % calls.size()], kRows - at);
      std::vector<float> out;
      if (reject && n > 1) {  // a verify window of which only the first row is accepted, then the rest rerun
        std::vector<float> first, rest;
        run(log, at, n, first);
        log.truncate(at + 1);
        run(log, at + 1, n - 1, rest);
        for (int l = 0; l < 2; ++l) {
          out.insert(out.end(), first.begin() + l * n * kHidden, first.begin() + (l * n + 1) * kHidden);
          out.insert(out.end(), rest.begin() + l * (n - 1) * kHidden, rest.begin() + (l + 1) * (n - 1) * kHidden);
        }
      } else {
        run(log, at, n, out);
      }
      // out is [layer][n][hidden]; reorder to [row][layer][hidden]
      for (std::int64_t r = 0; r < n; ++r)
        for (int l = 0; l < 2; ++l)
          rows.insert(rows.end(), out.begin() + (l * n + r) * kHidden, out.begin() + (l * n + r + 1) * kHidden);
      at += n;
    }
    last_log_ = std::make_unique<HostRowLog>(std::move(log));
    return rows;
  }

  std::unique_ptr<Backend> backend_ = make_mlx_backend();
  MlaBlock layers_[2];
  std::vector<float> x_;
  std::unique_ptr<HostRowLog> last_log_;
};

TEST_F(Mla, SameBitsHoweverRowsShareACall) {
  // Calls of up to Backend::invariant_rows() (16) rows: longer ones are prefill chunks, whose products take the
  // BLAS path with bits of their own (fixed by the chunk plan).
  const auto whole = by_calls({1});
  for (const auto& calls : std::vector<std::vector<std::int64_t>>{{16}, {5, 1, 7}, {3, 13}}) {
    EXPECT_EQ(0, std::memcmp(by_calls(calls).data(), whole.data(), whole.size() * 4)) << "calls of " << calls[0];
    EXPECT_EQ(0, std::memcmp(by_calls(calls, true).data(), whole.data(), whole.size() * 4))
        << "windows rolled back, calls of " << calls[0];
  }
}

TEST_F(Mla, TheIndexerDropsPoolsAndTheSharedLayerFollowsIt) {
  by_calls({kRows});
  const std::int64_t chosen_at = 8 + 3 * 4;
  int dropped = 0;
  for (std::int64_t pos = 0; pos < kRows; ++pos) {
    const auto row = last_log_->row(0, pos);
    const std::int64_t complete = (pos + 1) / 2;
    const int kept = (row[chosen_at] >= 0) + (row[chosen_at + 1] >= 0);
    EXPECT_EQ(kept, std::min<std::int64_t>(complete, 2)) << "position " << pos;
    dropped += complete > 2 ? 1 : 0;
    // A shared layer holds its latent only: its choices are read from layer 0's rows.
    EXPECT_EQ(last_log_->row(1, pos).size(), 8u);
  }
  EXPECT_GT(dropped, 20);
  // The shared layer attends its source's choices: as a dense layer it gives the same bits while no pool is
  // dropped (positions 0-4) and other values after.
  const auto shared = by_calls({kRows});
  layers_[1].cfg.selection = MlaConfig::Selection::Dense;
  const auto dense = by_calls({kRows});
  for (std::int64_t pos = 0; pos < kRows; ++pos) {
    const std::size_t at = static_cast<std::size_t>((pos * 2 + 1) * kHidden);
    const bool same = std::memcmp(shared.data() + at, dense.data() + at, kHidden * 4) == 0;
    EXPECT_EQ(same, pos < 5) << "position " << pos;
  }
}

}  // namespace
}  // namespace tf
