#pragma once
// Per-layer n-gram embeddings (PLE, families-and-formats §1.7): before a layer's mixer, each position's hashed
// n-grams (blocks/ngram_hash.h) look up `heads` rows of the layer's tables, concatenated into e [embed_dim]; e
// gates a value into every residual stream (hyper-connections' [n, streams * hidden]) and a dilated causal
// depthwise conv adds local context:
//   k = groupnorm_k(key_proj e) [streams * hidden], v = value_proj e [hidden], q = groupnorm_q(x);
//   per stream s: a = (k_s . q_s) / sqrt(hidden), a = sign(a) sqrt(max(|a|, 1e-6)), g_s = sigmoid(a) v;
//   c = groupnorm_c(g); x += g + silu(sum_k w[:, k] c[t - (K - 1 - k) N]) (dilation N = ngram_size).
// Its state per stream is the tokens before the call (the n-gram window) and the conv's past inputs, kept as one
// row a position in the stream's HostRowLog ([token, c]): a rejected draft's rows go with a truncation. A call
// reads back only reach() positions (the window's N - 1 tokens, the conv's (K - 1) N inputs; EOS restarts look
// inside the window alone), so its log layer is bounded: a fixed size per stream.
// The tables (most of the real model's weights: ~30 GB) are never loaded: each row is read from the mapped
// checkpoint file when a token needs it (NgramTable), so they cost the page cache what the text touches.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "blocks/ngram_hash.h"
#include "blocks/weight_source.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/mlx_affine.h"

namespace tf {

// An embedding table read in place from a mapped checkpoint, whole or in row shards (torch.chunk's pieces).
// A shard is float or MLX affine quantized (uint32 codes beside `.scales`/`.biases`, its spec from config.json's
// `quantization`): a row is dequantized when read, with MLX's arithmetic.
class NgramTable {
 public:
  NgramTable() = default;
  // The tensors `names` (the shards in order) of `ck`, together [rows, cols] of F32, F16 or BF16, or affine codes.
  NgramTable(std::shared_ptr<const HfCheckpoint> ck, const std::vector<std::string>& names, std::int64_t rows,
             std::int64_t cols);
  std::int64_t cols() const { return cols_; }
  void row(std::int64_t r, float* out) const;   // cols() values
  std::size_t bytes() const { return bytes_; }  // as stored

 private:
  struct Shard {
    const std::uint8_t* data = nullptr;
    std::int64_t rows = 0;
    StDType dtype = StDType::F32;
    std::optional<AffineSpec> quant;  // set: data holds codes, scales and biases the groups' values
    const std::uint8_t *scales = nullptr, *biases = nullptr;
    AffineFloat quant_float = AffineFloat::BF16;
  };
  std::shared_ptr<const HfCheckpoint> ck_;  // keeps the mappings
  std::vector<Shard> shards_;
  std::int64_t per_shard_ = 0, cols_ = 0;
  std::size_t bytes_ = 0;
};

struct NgramEmbeddingConfig {
  NgramHashSpec hash;
  int streams = 1;
  std::int64_t hidden = 0, embed_dim = 0;
  int conv_kernel = 4;
  float eps = 1e-6f;
  bool zero_centred_norms = true;
};

struct NgramEmbeddingBlock {
  NgramEmbeddingConfig cfg;
  std::shared_ptr<const NgramHash> hash;
  NgramTable table;  // [hash->table_rows(), embed_dim / heads], read in place
  DeviceWeight key_proj, value_proj, norm_key, norm_query, norm_conv;
  std::vector<float> conv;  // [streams * hidden, conv_kernel]
  int slot = 0;             // its layer in the stream's HostRowLog

  // `prefix` + ple_embedding.ngram_embedding.weight (or its shards ...shard_N.weight, N < `shards`) read in
  // place from `ck`, and key_proj, value_proj, norm_key, norm_query, norm_conv, conv1d through `src`.
  static NgramEmbeddingBlock load(WeightSource& src, std::shared_ptr<const HfCheckpoint> ck, const std::string& prefix,
                                  const NgramEmbeddingConfig& cfg, std::int64_t shards);
  std::int64_t log_width() const { return 1 + cfg.streams * cfg.hidden; }
  // The positions before a call's first row that it reads from the log: the oldest window token is N - 1
  // back, the oldest conv tap (K - 1) N back.
  std::int64_t reach() const {
    const std::int64_t n = cfg.hash.ngram_size;
    return std::max<std::int64_t>(n - 1, static_cast<std::int64_t>(cfg.conv_kernel - 1) * n);
  }
  // x [n, streams * hidden] -> x + the layer's n-gram features; each run's tokens (StreamRows::tokens) are its
  // rows' tokens, its HostRowLog (StreamRows::host_rows) the window before them.
  Tensor forward(Backend& b, const Tensor& x, std::span<const StreamRows> runs) const;
};

}  // namespace tf
