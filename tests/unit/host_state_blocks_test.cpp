// The host-side pieces of the sparse-attention and n-gram blocks: the n-gram hash against transformers'
// qwen4_exp (Qwen4ExpTextNGramEmbedding, 5.25: the table rows it looked up for these tokens, read back through a
// table whose row r holds r), and the HostRowLog's truncation and snapshots.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tf
