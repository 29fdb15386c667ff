// The n-gram embedding block (blocks/ngram_embedding.h) over a bounded HostRowLog layer (its reach plus a call's
// rows) against one that keeps every position: the same outputs bit for bit through decode steps, verify windows
// rolled back inside themselves, calls longer than planned, EOS in the window, and a snapshot restored midway.
// A read of a row the bounded layer dropped throws, so a reach() shorter than the block's reads fails here.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "backends/mlx/mlx_backend.h"
#include "blocks/host_row_log.h"
#include "blocks/ngram_embedding.h"

namespace tf {
namespace {

namespace fs = std::filesystem;

constexpr int kStreams = 2;
constexpr std::int64_t kHidden = 8, kEmbed = 8, kCallRows = 16, kVocab = 320;
constexpr std::int32_t kEos = 258;

std::vector<float> randn(std::size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = scale * d(rng);
  return v;
}

DeviceWeight upload(Backend& b, std::vector<float> v, std::int64_t rows, std::int64_t cols, bool vector) {
  HostWeight w;
  w.name = "test";
  w.rows = rows;
  w.cols = cols;
  w.shape = vector ? std::vector<std::int64_t>{cols} : std::vector<std::int64_t>{rows, cols};
  w.dtype = HostDType::F32;
  w.data.resize(v.size() * 4);
  std::memcpy(w.data.data(), v.data(), w.data.size());
  return b.upload(w);
}

// A checkpoint directory holding one F32 table "t" [rows, cols] of random values.
std::shared_ptr<const HfCheckpoint> table_checkpoint(const fs::path& dir, std::int64_t rows, std::int64_t cols,
                                                     std::mt19937& rng) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << "{}";
  const auto values = randn(static_cast<std::size_t>(rows * cols), rng, 1.0f);
  std::string header = R"({"t":{"dtype":"F32","shape":[)" + std::to_string(rows) + "," + std::to_string(cols) +
                       R"(],"data_offsets":[0,)" + std::to_string(values.size() * 4) + "]}}";
  while (header.size() % 8 != 0) header += ' ';
  const std::uint64_t n = header.size();
  std::ofstream f(dir / "model.safetensors", std::ios::binary);
  f.write(reinterpret_cast<const char*>(&n), 8);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * 4));
  f.close();
  return std::make_shared<const HfCheckpoint>(dir.string());
}

class NgramWindow : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tf_ngram_window_" + std::to_string(::getpid()));
    NgramEmbeddingConfig& c = block_.cfg;
    c.hash.ngram_size = 3;
    c.hash.heads_per_ngram = 2;
    c.hash.vocab = kVocab;
    c.hash.vocab_base = 53;
    c.hash.eos = kEos;
    c.streams = kStreams;
    c.hidden = kHidden;
    c.embed_dim = kEmbed;
    c.conv_kernel = 4;
    block_.hash = std::make_shared<const NgramHash>(c.hash);
    const std::int64_t wide = kStreams * kHidden, heads = c.hash.heads();
    block_.table = NgramTable(table_checkpoint(dir_, block_.hash->table_rows(), kEmbed / heads, rng_), {"t"},
                              block_.hash->table_rows(), kEmbed / heads);
    Backend& b = *backend_;
    block_.key_proj = upload(b, randn(static_cast<std::size_t>(wide * kEmbed), rng_, 0.5f), wide, kEmbed, false);
    block_.value_proj =
        upload(b, randn(static_cast<std::size_t>(kHidden * kEmbed), rng_, 0.5f), kHidden, kEmbed, false);
    for (auto* norm : {&block_.norm_key, &block_.norm_query, &block_.norm_conv}) {
      auto v = randn(static_cast<std::size_t>(wide), rng_, 0.1f);
      for (auto& x : v) x += 1.0f;
      *norm = upload(b, v, 1, wide, true);
    }
    block_.conv = randn(static_cast<std::size_t>(wide * c.conv_kernel), rng_, 0.5f);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // One call of `rows` rows on both logs: the outputs must agree bit for bit.
  void call(std::int64_t rows) {
    const std::int64_t start = ring_->length(), wide = kStreams * kHidden;
    ASSERT_EQ(start, full_.length());
    std::uniform_int_distribution<std::int32_t> token(0, static_cast<std::int32_t>(kVocab) - 1);
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(rows));
    for (auto& t : tokens) t = token(rng_) % 9 == 0 ? kEos : token(rng_);
    const auto x = randn(static_cast<std::size_t>(rows * wide), rng_, 1.0f);
    std::vector<float> out[2];
    int i = 0;
    for (HostRowLog* log : {&full_, ring_.get()}) {
      const StreamRows run{nullptr, start, rows, nullptr, nullptr, log, tokens, {}};
      Backend& b = *backend_;
      out[i++] = b.to_host(block_.forward(b, b.from_host(x, rows, wide), std::span<const StreamRows>(&run, 1)));
    }
    ASSERT_EQ(out[0].size(), static_cast<std::size_t>(rows * wide));
    ASSERT_EQ(0, std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float)))
        << "rows " << start << ".." << start + rows - 1;
  }
  void truncate(std::int64_t length) {
    full_.truncate(length);
    ring_->truncate(length);
  }

  fs::path dir_;
  std::mt19937 rng_{11};
  std::unique_ptr<Backend> backend_ = make_mlx_backend();
  NgramEmbeddingBlock block_;
  HostRowLog full_{std::vector<std::int64_t>{1 + kStreams * kHidden}};
  std::unique_ptr<HostRowLog> ring_ =
      std::make_unique<HostRowLog>(std::vector<HostRowLayer>{{1 + kStreams * kHidden, 9}}, kCallRows);
};

TEST_F(NgramWindow, ReachIsTheWindowAndTheDilatedConv) {
  EXPECT_EQ(block_.reach(), 9);  // (K - 1) N = 3 x 3 past the window's N - 1 = 2
  block_.cfg.conv_kernel = 1;
  EXPECT_EQ(block_.reach(), 2);
}

TEST_F(NgramWindow, BoundedLogGivesTheSameBitsAsEveryPosition) {
  ASSERT_EQ(block_.reach(), 9);
  call(5);  // shorter than the reach
  call(kCallRows);
  for (int step = 0; step < 200; ++step) {  // decode steps and verify windows rolled back inside themselves
    if (step % 7 == 3) {
      const std::int64_t before = ring_->length();
      call(6);
      truncate(before + step % 5);
    } else {
      call(1);
    }
    ASSERT_FALSE(HasFatalFailure());
  }
  EXPECT_GT(ring_->held_from(0), 0);  // positions were dropped
  // A snapshot restored into a fresh log continues exactly.
  const auto saved = ring_->snapshot();
  auto restored =
      std::make_unique<HostRowLog>(std::vector<HostRowLayer>{{block_.log_width(), block_.reach()}}, kCallRows);
  restored->restore(saved);
  EXPECT_EQ(restored->snapshot(), saved);
  ring_ = std::move(restored);
  for (int step = 0; step < 20; ++step) call(1 + step % 3);
  call(3 * kCallRows + 5);  // a call longer than the planned ones grows the layer for itself
  for (int step = 0; step < 40; ++step) call(step % 2 ? 1 : kCallRows);
  EXPECT_GT(ring_->length(), 300);
}

}  // namespace
}  // namespace tf
