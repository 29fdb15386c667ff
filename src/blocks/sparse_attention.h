#pragma once
// Sparse attention with an indexer (families-and-formats §1.3): gated attention (blocks/attention.h's gated
// form: q/k norms, partial RoPE, output gate) whose query at position p attends only the keys an indexer picks:
//   the positions 0..p are cut into complete blocks of `compress_ratio` from the start and an incomplete tail;
//   a block's index key is the mean of its positions' raw index keys, RMS-normed, rotated at the block's first
//   position; the query's index heads (normed, rotated at p) score a block by sum_h relu(q_h . k_b) / sqrt(d);
//   the `budget / compress_ratio` best blocks (ties to the earlier block) and the whole tail are attended.
// With at most that many complete blocks every position is attended (dense attention).
// Its state per stream is, for every position, the key and value rows and the raw index key, one row a position
// in the stream's HostRowLog: the block keys are recomputed from them, so a row's selection depends only on the
// positions before it, never on other rows of the call, and truncation or a snapshot is the rows themselves.
// The projections run as backend products; selection and attention run on the host over each row alone.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "blocks/attention.h"
#include "blocks/weight_source.h"

namespace tf {

struct SparseAttentionConfig {
  AttentionConfig attention;  // heads, kv heads, head_dim, RoPE, q/k norms, output gate
  int index_heads = 0, index_head_dim = 0;
  int compress_ratio = 1;
  int budget = 0;  // tokens from complete blocks (a multiple of compress_ratio)
  bool zero_centred_index_norms = true;
};

struct SparseAttentionBlock {
  SparseAttentionConfig cfg;
  DeviceWeight q, k, v, o, q_norm, k_norm;
  DeviceWeight index_qk, index_q_norm;  // [(index_heads + 1) * index_head_dim, hidden]: the query heads, then the key
  std::vector<float> index_k_norm;      // plain multipliers (block keys are normed on the host)

  // `prefix` + q_proj, k_proj, v_proj, o_proj, q_norm, k_norm, indexer.{index_qk_proj, q_layernorm, k_layernorm}.
  static SparseAttentionBlock load(WeightSource& src, const std::string& prefix, const SparseAttentionConfig& cfg);
  std::int64_t log_width() const {
    return 2LL * cfg.attention.spec.kv_heads * cfg.attention.spec.head_dim + cfg.index_head_dim;
  }
  // h [n, hidden] -> [n, hidden]; each run's rows go to layer `slot` of its HostRowLog (StreamRows::host_rows)
  // at their positions.
  Tensor forward(Backend& b, const Tensor& h, std::span<const StreamRows> runs, int slot) const;
};

// The blocks a query picks among `scores` (one per complete block): the `keep` best, ties to the earlier
// block, in ascending block order. All of them when there are at most `keep`.
std::vector<std::int64_t> pick_blocks(std::span<const float> scores, std::int64_t keep);

}  // namespace tf
