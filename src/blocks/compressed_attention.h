#pragma once
// Shared-KV attention over a sliding window plus a compressed branch (families-and-formats §1.3: DeepSeek-V4).
//   q = q_b(rms(q_a x) w_qa), each head then RMS-normed without a weight; one key/value head kv = rms(kv_proj x)
//   w_kv (the same row is key and value); both RoPE'd on their last `rope_dims` dims, interleaved pairs.
//   A query at p attends the window p - window + 1 .. p, plus compressed entries (below), plus a learned sink
//   per head that joins the softmax denominator with no value; scale 1 / sqrt(head_dim). The output is rotated
//   back by -p on its rope dims (K = V carried the keys' rotation), then a grouped low-rank projection: the
//   heads' outputs cut into `o_groups` groups, each to `o_rank` values by its own block of o_a, then o_b.
// Compressed branches (per layer):
//   Pooled (rate m, "heavily compressed"): window w = positions [w m, (w + 1) m) pools to
//     rms(sum_t softmax_t(gate_t + bias_t) kv_t) w_c per channel, RoPE'd (the compress rope) at w m; a query at
//     p sees the entries complete by p (w < (p + 1) / m).
//   Overlapping (rate m, "compressed sparse"): kv and gate are 2 x head_dim wide, [Ca | Cb]; entry w pools Ca of
//     window w - 1 and Cb of window w (2 m slots; window 0 has only Cb). An indexer (the same pooling at
//     index_head_dim: its own keys) scores the complete entries for each query,
//       sum_h w_h relu(q_h . k_w) / sqrt(index_head_dim), q_h = wq_b(q_resid) RoPE'd (compress rope) at p,
//       w = weights_proj(x) / sqrt(index_heads),
//     and the query attends all of them while there are at most index_top_k, else the index_top_k best (ties to
//     the earlier entry).
// State, in the stream's HostRowLog, two layers (slot and, for a compressed layer, slot + 1):
//   recent rows (bounded: what a call reads before its first row, max(window - 1, the pooling's reach, rate)
//     positions, plus the call's rows): a position's window key, its compressor inputs (kv, gate + position bias)
//     and, on the position that completes a window, that window's entry and index key;
//   entries (every position): the entries compacted, entry w's (head_dim + index_dim) values cut into `rate`
//     pieces carried by the positions of window w + 1 (each row a piece of the entry completed before its
//     window began). A query reads the entries whose pieces are all written from there and the one or two
//     newer ones from the recent rows.
// So a stream holds ceil((head_dim + index_dim) / rate) floats a position and layer (DeepSeek-V4-Flash: 160 for a
// compressed sparse layer, 4 for a heavily compressed one) beside a fixed window of recent rows. An entry
// depends only on the positions before it and a row's choice on its own query: truncation inside the last call
// and snapshots are the rows themselves, and a row's output never depends on the rows beside it in a call.
// Projections run on the backend; pooling, choice and attention on the host.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "blocks/host_row_log.h"
#include "blocks/weight_source.h"

namespace tf {

struct CompressedAttentionConfig {
  std::int64_t hidden = 0;
  int heads = 0, head_dim = 0, q_rank = 0, rope_dims = 0;
  float eps = 1e-6f;
  int window = 0;  // the sliding window (positions a query sees, itself included)
  enum class Branch { None, Pooled, Overlapping };
  Branch branch = Branch::None;
  int rate = 1;                                   // positions a compressed entry pools (its stride)
  int index_heads = 0, index_dim = 0, top_k = 0;  // Overlapping: the indexer
  int o_groups = 1, o_rank = 0;
  std::vector<float> inv_freq;           // the layer's rope (rope_dims / 2 frequencies)
  std::vector<float> compress_inv_freq;  // the compressed entries' and the indexer's rope
};

// The names a checkpoint gives the block's tensors, under the block's prefix.
struct CompressedAttentionNames {
  std::string q_a = "wq_a.weight", q_norm = "q_norm.weight", q_b = "wq_b.weight", kv = "wkv.weight",
              kv_norm = "norm.weight", o_a = "wo_a.weight", o_b = "wo_b.weight", sinks = "attn_sink";
  std::string compressor = "compressor.", indexer = "indexer.";  // + wkv, wgate, ape, norm.weight; + wq_b, weights_proj
};

struct CompressedAttentionBlock {
  CompressedAttentionConfig cfg;
  DeviceWeight q_a, q_norm, q_b, kv, kv_norm, o_b;
  std::vector<DeviceWeight> o_a;  // one per group [o_rank, heads * head_dim / o_groups]
  std::vector<float> sinks;
  // The compressor and the indexer's compressor: projections to kv and gate ([c, hidden], c = head_dim or
  // 2 x head_dim), the position bias [rate, c] and the entry norm.
  struct Pool {
    DeviceWeight wkv, wgate;
    std::vector<float> ape, norm;
    int dim = 0;  // the entry's width
  };
  Pool compressor, index_pool;
  DeviceWeight index_q, index_w;  // wq_b [index_heads * index_dim, q_rank], weights_proj [index_heads, hidden]

  static CompressedAttentionBlock load(WeightSource& src, const std::string& prefix,
                                       const CompressedAttentionConfig& cfg,
                                       const CompressedAttentionNames& names = {});
  // Its HostRowLog layers: the recent rows, then (a compressed layer) the entries.
  std::vector<HostRowLayer> log_layers() const;
  // h [n, hidden] -> [n, hidden]; each run's rows go to layers `slot` (and slot + 1) of its HostRowLog.
  Tensor forward(Backend& b, const Tensor& h, std::span<const StreamRows> runs, int slot) const;
};

// YaRN's inverse frequencies (transformers' _compute_yarn_parameters, float32 as it computes them): `dims`
// rotary dims, base, factor, original context, beta_fast / beta_slow, truncate.
std::vector<float> yarn_inv_freq(int dims, double base, double factor, double original_context, double beta_fast,
                                 double beta_slow, bool truncate);
// Default RoPE's: base^(-2i / dims).
std::vector<float> default_inv_freq(int dims, double base);

}  // namespace tf
