#pragma once
// Multi-head latent attention (families-and-formats §1.3: DeepSeek-V3, GLM-5.3-Flash), NoPE (no rotary part:
// qk_rope_head_dim 0), on the absorbed path: a position keeps only its normed latent c = rms(kv_a x)
// (kv_lora_rank values), never per-head keys and values.
//   q = q_b(rms(q_a x)) per head [nope]; kv_b's rows are per head W_UK [nope, r] then W_UV [v, r];
//   score_t = (W_UK^T q) . c_t / sqrt(nope); out = W_UV (sum_t softmax_t c_t) per head, then o_proj.
// Which positions a query attends: all of them (causal), or what a KPool indexer picks (blocks/kpool_indexer.h):
// a layer runs its own indexer, or reuses the choice of an earlier layer (GLM's "shared" indexer layers).
// Its state per stream is one row a position in the stream's HostRowLog: c, and for a layer with its own indexer
// the index key, pool gates, the key of the pool that position completes (zeros elsewhere) and the pools the
// position's query chose (-1 for none). A shared layer reads those choices from its source layer's rows, so a
// row's attention depends only on the positions before it: truncation and snapshots are the rows themselves.
// The projections run as backend products; choice and attention run on the host over each row alone.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "blocks/kpool_indexer.h"
#include "blocks/weight_source.h"

namespace tf {

struct MlaConfig {
  std::int64_t hidden = 0;
  int heads = 0, q_rank = 0, kv_rank = 0, nope_dim = 0, v_dim = 0;
  float eps = 1e-6f;  // the q_a and kv_a RMSNorms
  enum class Selection { Dense, Own, Shared };
  Selection selection = Selection::Dense;
  KpoolIndexerConfig indexer;  // Own and Shared (the source layer's)
  int shared_from = -1;        // Shared: the HostRowLog slot of the layer whose choices it reuses
};

struct MlaBlock {
  MlaConfig cfg;
  DeviceWeight q_a, q_a_norm, q_b, kv_a, kv_a_norm, o;
  std::vector<float> kv_b;  // [heads * (nope + v), kv_rank] on the host: the absorbed products run there
  std::optional<KpoolIndexer> indexer;

  // `prefix` + q_a_proj, q_a_layernorm, q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj, and
  // indexer.* for a layer with its own indexer.
  static MlaBlock load(WeightSource& src, const std::string& prefix, const MlaConfig& cfg);
  // Floats a position: c, then (own indexer) index key, pool gates, pool key, chosen pools.
  std::int64_t log_width() const;
  // h [n, hidden] -> [n, hidden]; each run's rows go to layer `slot` of its HostRowLog at their positions.
  Tensor forward(Backend& b, const Tensor& h, std::span<const StreamRows> runs, int slot) const;
};

}  // namespace tf
