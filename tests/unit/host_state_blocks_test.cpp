// The host-side pieces of the sparse-attention and n-gram blocks: the n-gram hash against transformers'
// qwen4_exp (Qwen4ExpTextNGramEmbedding, 5.25: the table rows it looked up for these tokens, read back through a
// table whose row r holds r), and the HostRowLog's truncation and snapshots, its bounded layers (a reach plus a
// call's rows) reading as one that keeps every position, at a fixed size.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "blocks/host_row_log.h"
#include "blocks/ngram_hash.h"

namespace tf {
namespace {

// tests/goldens/qwen4_exp's config: vocab 320, 2- and 3-grams, 2 heads each, base 53, seed 1234, EOS 258.
NgramHashSpec tiny(int layer_index) {
  NgramHashSpec s;
  s.ngram_size = 3;
  s.heads_per_ngram = 2;
  s.vocab = 320;
  s.vocab_base = 53;
  s.divisor = 128;
  s.seed = 1234;
  s.layer_index = layer_index;
  s.eos = 258;
  return s;
}

std::vector<std::vector<std::int64_t>> rows_of(const NgramHash& h, const std::vector<std::int32_t>& tokens) {
  std::vector<std::vector<std::int64_t>> out;
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    std::vector<std::int32_t> window(3, 258);  // before the start: EOS
    for (std::size_t w = 0; w < 3; ++w)
      if (t + w >= 2) window[w] = tokens[t + w - 2];
    std::vector<std::int64_t> r(4);
    h.rows(window, r);
    out.push_back(r);
  }
  return out;
}

TEST(NgramHash, MatchesTheReferenceRowsAcrossEosAndLayers) {
  const std::vector<std::int32_t> tokens{5, 300, 258, 7, 9, 258, 258, 11, 12, 13};
  const NgramHash first(tiny(0)), second(tiny(1));
  EXPECT_EQ(first.table_rows(), 256);
  EXPECT_EQ(second.table_rows(), 384);
  const std::vector<std::vector<std::int64_t>> want0{
      {2, 90, 156, 216}, {45, 72, 114, 204}, {32, 109, 139, 219}, {22, 102, 132, 209}, {39, 111, 141, 218},
      {6, 83, 142, 188}, {16, 93, 118, 238}, {41, 98, 128, 194},  {33, 58, 148, 201},  {16, 55, 149, 216}};
  const std::vector<std::vector<std::int64_t>> want1{
      {59, 110, 177, 288}, {61, 92, 210, 227}, {27, 75, 182, 241}, {3, 103, 206, 289}, {19, 77, 180, 294},
      {63, 121, 204, 290}, {4, 132, 167, 243}, {12, 80, 194, 293}, {16, 81, 159, 252}, {36, 125, 188, 239}};
  EXPECT_EQ(rows_of(first, tokens), want0);
  EXPECT_EQ(rows_of(second, tokens), want1);
}

TEST(HostRowLog, TruncatesAndRestoresExactly) {
  HostRowLog log({2, 3});
  for (int p = 0; p < 5; ++p) {
    log.append(0, std::vector<float>{float(p), float(p) + 0.5f});
    log.append(1, std::vector<float>{float(p), 1.0f, 2.0f});
  }
  EXPECT_EQ(log.length(), 5);
  const auto saved = log.snapshot();
  log.truncate(3);
  EXPECT_EQ(log.length(), 3);
  EXPECT_EQ(log.row(0, 2)[1], 2.5f);
  log.append(0, std::vector<float>{9.0f, 9.0f});
  log.append(1, std::vector<float>{9.0f, 9.0f, 9.0f});
  EXPECT_EQ(log.row(1, 3)[0], 9.0f);
  HostRowLog other({2, 3});
  other.restore(saved);
  EXPECT_EQ(other.length(), 5);
  EXPECT_EQ(other.row(0, 4)[1], 4.5f);
  EXPECT_EQ(other.snapshot(), saved);
  HostRowLog wrong({3});
  EXPECT_THROW(wrong.restore(saved), std::invalid_argument);
  EXPECT_THROW(log.truncate(7), std::invalid_argument);
}

constexpr std::int64_t kReach = 9, kCallRows = 16, kWide = 5;

// Two logs fed the same calls, one keeping every position, one its layer 1 bounded to kReach; a call reads back
// every row from kReach before each of its rows, and both must read the same bits.
struct Pair {
  HostRowLog full{std::vector<std::int64_t>{3, kWide}};
  std::unique_ptr<HostRowLog> ring = fresh();
  std::mt19937 rng{5};

  static std::unique_ptr<HostRowLog> fresh() {
    return std::make_unique<HostRowLog>(std::vector<HostRowLayer>{{3}, {kWide, kReach}}, kCallRows);
  }
  std::vector<float> feed(HostRowLog& log, const std::vector<float>& rows, std::int64_t start, std::int64_t n) {
    std::vector<float> read;
    for (int layer = 0; layer < 2; ++layer) {
      const auto w = static_cast<std::size_t>(log.width(layer));
      log.start_call(layer, start, n);
      for (std::int64_t i = 0; i < n; ++i)
        log.append(layer, std::span<const float>(rows).subspan(static_cast<std::size_t>(i) * w, w));
    }
    for (std::int64_t p = start; p < start + n; ++p)
      for (std::int64_t q = std::max<std::int64_t>(0, p - kReach); q <= p; ++q)
        for (const float v : log.row(1, q)) read.push_back(v);
    return read;
  }
  void call(std::int64_t n) {
    const std::int64_t start = ring->length();
    ASSERT_EQ(start, full.length());
    std::normal_distribution<float> d;
    std::vector<float> rows(static_cast<std::size_t>(n * kWide));
    for (auto& v : rows) v = d(rng);
    const auto want = feed(full, rows, start, n), got = feed(*ring, rows, start, n);
    ASSERT_EQ(want.size(), got.size());
    ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float))) << "call at " << start;
    ASSERT_EQ(ring->length(), start + n);
  }
  void truncate(std::int64_t length) {
    full.truncate(length);
    ring->truncate(length);
  }
};

TEST(HostRowLog, BoundedLayerReadsAsEveryPosition) {
  Pair p;
  p.call(5);
  p.call(kCallRows);
  for (int step = 0; step < 300; ++step) {  // decode steps and verify windows rolled back inside themselves
    if (step % 7 == 3) {
      const std::int64_t before = p.ring->length();
      p.call(6);
      p.truncate(before + step % 5);
    } else {
      p.call(1);
    }
    ASSERT_FALSE(testing::Test::HasFatalFailure());
  }
  EXPECT_GT(p.ring->held_from(1), 0);
  EXPECT_EQ(p.ring->held_from(0), 0);  // the unbounded layer keeps every position
  p.call(3 * kCallRows + 5);           // a call longer than planned grows the layer for itself
  for (int step = 0; step < 40; ++step) p.call(step % 2 ? 1 : kCallRows);
  EXPECT_GT(p.ring->length(), 350);
}

TEST(HostRowLog, BoundedLayerHoldsAFixedSize) {
  const HostRowLayer layer{kWide, kReach};
  HostRowLog log({layer}, kCallRows);
  const std::vector<float> row(kWide, 1.0f);
  const auto run = [&](std::int64_t n) {
    const std::int64_t start = log.length();
    log.start_call(0, start, n);
    for (std::int64_t i = 0; i < n; ++i) log.append(0, row);
  };
  run(kCallRows);
  for (int i = 0; i < 3 * kCallRows; ++i) run(1);
  const std::size_t steady = HostRowLog::steady_bytes(layer, kCallRows);
  EXPECT_EQ(steady, static_cast<std::size_t>((kReach + kCallRows) * kWide) * sizeof(float));
  EXPECT_EQ(log.bytes(), steady);
  for (int i = 0; i < 500; ++i) {
    run(i % 10 == 0 ? kCallRows : 1);
    ASSERT_EQ(log.bytes(), steady) << "after " << log.length() << " positions";
  }
}

TEST(HostRowLog, BoundedLayerRefusesRollbackPastItsRows) {
  Pair p;
  for (int i = 0; i < 4; ++i) p.call(kCallRows);
  for (int i = 0; i < 3; ++i) p.call(1);
  const std::int64_t length = p.ring->length(), first = p.ring->held_from(1);
  ASSERT_GT(first, 0);
  // Positions before `first` are gone: a length whose reach starts there or later is fine, one before is not.
  EXPECT_THROW(p.ring->truncate(first + kReach - 1), std::logic_error);
  EXPECT_EQ(p.ring->length(), length);  // a refused truncation changes nothing
  EXPECT_EQ(p.ring->rows(0), length);
  EXPECT_THROW(p.ring->row(1, first - 1), std::logic_error);
  p.truncate(first + kReach);
  EXPECT_NO_THROW(p.call(3));
  EXPECT_THROW(p.ring->start_call(1, p.ring->length() + 1, 1), std::invalid_argument);  // a gap
}

TEST(HostRowLog, BoundedSnapshotCarriesTheReachAndContinuesExactly) {
  Pair p;
  for (int i = 0; i < 3; ++i) p.call(kCallRows);
  p.call(2);
  const std::int64_t length = p.ring->length();
  const auto saved = p.ring->snapshot();
  // The length, every row of the unbounded layer, the last kReach rows of the bounded one.
  EXPECT_EQ(saved.size(), 8 + static_cast<std::size_t>(length * 3 + kReach * kWide) * sizeof(float));
  auto restored = Pair::fresh();
  restored->restore(saved);
  EXPECT_EQ(restored->length(), length);
  EXPECT_EQ(restored->held_from(1), length - kReach);
  EXPECT_EQ(restored->snapshot(), saved);
  EXPECT_THROW(restored->truncate(length - 1), std::logic_error);  // nothing before the reach is held
  p.ring = std::move(restored);
  for (int step = 0; step < 60; ++step) {
    if (step % 5 == 2) {
      const std::int64_t before = p.ring->length();
      p.call(4);
      p.truncate(before + 1);
    } else {
      p.call(step % 11 == 0 ? kCallRows : 1);
    }
    ASSERT_FALSE(testing::Test::HasFatalFailure());
  }
  // A short stream's snapshot holds what it has; a state of another shape is refused.
  Pair q;
  q.call(4);
  const auto small = q.ring->snapshot();
  EXPECT_EQ(small.size(), 8 + static_cast<std::size_t>(4 * 3 + 4 * kWide) * sizeof(float));
  auto back = Pair::fresh();
  back->restore(small);
  EXPECT_EQ(back->snapshot(), small);
  HostRowLog every({3, kWide});
  EXPECT_THROW(every.restore(saved), std::invalid_argument);
  EXPECT_THROW(back->restore(p.full.snapshot()), std::invalid_argument);
}

}  // namespace
}  // namespace tf
