#pragma once
// Hashed n-gram ids (families-and-formats §1.7): each position's 2..N-grams of tokens, each order hashed by
// `heads_per_ngram` heads into tables of distinct prime sizes, exactly as the reference computes them:
//   multipliers m_i = 2 (splitmix64(seed + 10007 layer_index + 0x9E3779B97F4A7C15 (i + 1)) mod half) + 1,
//     half = max(1, floor((2^63 - 1) / vocab) / 2), for i = 0 .. N-1;
//   the token i places back (i = 0: the token itself) is EOS when an EOS lies between it and the token, or
//     before the sequence start (a document restarts its n-grams after EOS);
//   order g: h = t_0 m_0 xor t_1 m_1 xor .. t_{g-1} m_{g-1} (each product < 2^63: no overflow);
//   head j of order g (heads numbered across orders from 2): row = h mod p_j + offset_j, p_j the
//     (layer_index * heads + j + 1)-th prime >= vocab_base, offset_j the sum of the sizes before it.
// The table has that sum of rows, padded up to a multiple of `divisor`.
#include <cstdint>
#include <span>
#include <vector>

namespace tf {

struct NgramHashSpec {
  int ngram_size = 3;  // N: orders 2 .. N
  int heads_per_ngram = 8;
  std::int64_t vocab = 0;       // the model's (unigram) vocabulary
  std::int64_t vocab_base = 0;  // ngram_vocab_size_base
  std::int64_t divisor = 128;   // make_ngram_vocab_size_divisible_by
  std::int64_t seed = 1234;
  int layer_index = 0;  // this layer's place among the n-gram layers (0-based)
  std::int32_t eos = 0;
  int heads() const { return (ngram_size - 1) * heads_per_ngram; }
};

class NgramHash {
 public:
  explicit NgramHash(const NgramHashSpec& spec);
  const NgramHashSpec& spec() const { return spec_; }
  std::int64_t table_rows() const { return padded_rows_; }
  // The table row of every head for the last token of `window` (N tokens, oldest first; positions before the
  // sequence start given as EOS): heads() rows into `rows`.
  void rows(std::span<const std::int32_t> window, std::span<std::int64_t> rows) const;

 private:
  NgramHashSpec spec_;
  std::vector<std::uint64_t> multipliers_;
  std::vector<std::int64_t> sizes_, offsets_;
  std::int64_t padded_rows_ = 0;
};

}  // namespace tf
