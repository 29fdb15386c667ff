#pragma once
// The DSA indexer with KPool compression (families-and-formats §1.3; GLM-5.3-Flash): it picks, for each query
// row, which earlier positions a latent-attention layer (blocks/mla.h) attends.
//   per position: an index key k = LayerNorm(wk x) (weight and bias, eps 1e-6) and pool gates g = compress_gate x;
//   positions are cut into pools of `pool` from the start; a complete pool's key is, per channel j,
//     sum_t softmax_t(g_t[j] + ape[t][j]) k_t[j] over its positions t;
//   a query's index heads q_h = wq_b(q_resid) and weights w = weights_proj(x) / sqrt(heads) score a pool
//     sum_h w_h relu(q_h . key / sqrt(head_dim));
//   the query at position p sees the floor((p + 1) / pool) pools complete by p: all of them when there are at
//     most top_k / pool, else the top_k / pool best (ties to the earlier pool); the incomplete tail is always
//     attended.
// A pool's key depends on its positions alone and a row's choice on its own query and the pools before it, so
// a row's choice never depends on other rows of the call. The math runs on the host.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "blocks/weight_source.h"

namespace tf {

struct KpoolIndexerConfig {
  std::int64_t hidden = 0, q_rank = 0;
  int heads = 0, head_dim = 0;
  int pool = 1;   // index_kpool
  int top_k = 0;  // index_topk: tokens from complete pools, a multiple of pool
  int pools_kept() const { return top_k / pool; }
};

struct KpoolIndexer {
  KpoolIndexerConfig cfg;
  DeviceWeight wq_b, wk, weights_proj, compress_gate;
  std::vector<float> k_norm_weight, k_norm_bias, ape;  // [head_dim], [head_dim], [pool, head_dim]

  // `prefix` + wq_b, wk, k_norm.{weight,bias}, weights_proj, index_kpool_compress_ape, index_kpool_compress_gate.
  static KpoolIndexer load(WeightSource& src, const std::string& prefix, const KpoolIndexerConfig& cfg);

  // The rows' projections (backend products), copied to the host: per row, index queries [heads * head_dim],
  // head weights [heads] (already / sqrt(heads)), the normed index key [head_dim] and pool gates [head_dim].
  struct Rows {
    std::vector<float> q, w, k, gate;
  };
  Rows project(Backend& b, const Tensor& h, const Tensor& q_resid) const;

  // A complete pool's key [head_dim] from its positions' keys and gates (pool values each, in order).
  void pool_key(std::span<const float* const> keys, std::span<const float* const> gates, float* out) const;
  // One query's score of each pool key (`pools` keys of head_dim after each other).
  void score(const float* q, const float* w, std::span<const float> pool_keys, std::int64_t pools,
             std::vector<float>& out) const;
};

}  // namespace tf
