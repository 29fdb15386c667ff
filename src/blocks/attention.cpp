#include "blocks/attention.h"

#include <cmath>
#include <vector>

namespace tf {

AttentionSpec attention_spec(std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim) {
  AttentionSpec a;
  a.heads = static_cast<int>(heads);
  a.kv_heads = static_cast<int>(kv_heads);
  a.head_dim = static_cast<int>(head_dim);
  a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  return a;
}

AttentionBlock AttentionBlock::load(WeightSource& src, const std::string& prefix, const AttentionConfig& cfg) {
  AttentionBlock blk;
  blk.cfg = cfg;
  const std::int64_t hd = cfg.spec.head_dim, q_rows = cfg.spec.heads * hd * (cfg.output_gate ? 2 : 1);
  const std::int64_t kv_rows = cfg.spec.kv_heads * hd;
  // Tensor parallelism: each rank holds a part of the query and key/value heads (consecutive heads: query head h
  // reads key/value head h / (heads / kv_heads) on every rank alike) and sums its part of o_proj's product.
  blk.q = src.matrix(prefix + "q_proj.weight", q_rows, cfg.hidden, WeightSplit::outputs(q_rows / cfg.spec.heads));
  blk.k = src.matrix(prefix + "k_proj.weight", kv_rows, cfg.hidden, WeightSplit::outputs(hd));
  if (!cfg.values_from_keys)
    blk.v = src.matrix(prefix + "v_proj.weight", kv_rows, cfg.hidden, WeightSplit::outputs(hd));
  if (cfg.value_norm)
    blk.v_norm = src.values(prefix + "v_norm (ones)", std::vector<float>(static_cast<std::size_t>(hd), 1.0f));
  blk.o = src.matrix(prefix + "o_proj.weight", cfg.hidden, cfg.spec.heads * hd, WeightSplit::inputs());
  if (cfg.qk_norm) {
    blk.q_norm = src.vector(prefix + "q_norm.weight", hd, cfg.zero_centred_qk_norm);
    blk.k_norm = src.vector(prefix + "k_norm.weight", hd, cfg.zero_centred_qk_norm);
  }
  return blk;
}

Tensor AttentionBlock::forward(Backend& b, const Tensor& h, std::span<const StreamRows> given, int slot) const {
  const AttentionSpec& at = cfg.spec;
  // A sliding-window layer keeps its keys and values in the stream's window store.
  std::vector<StreamRows> windowed;
  if (at.window > 0) {
    windowed.assign(given.begin(), given.end());
    for (auto& r : windowed) r.cache = r.window_cache;
  }
  const std::span<const StreamRows> runs = at.window > 0 ? std::span<const StreamRows>(windowed) : given;
  const bool plain_values = !cfg.values_from_keys && !cfg.value_norm;
  if (!cfg.use_rope && !cfg.output_gate && !cfg.qk_norm && plain_values)
    return b.linear(b.attend(runs, slot, b.linear(h, q), b.linear(h, k), b.linear(h, v), at), o);
  if (!cfg.output_gate && !cfg.qk_norm && plain_values) {
    // Llama: the op sequence the CUDA backend's fusion and its measured tapes expect.
    Tensor qr = b.rope(b.linear(h, q), at.heads, at.head_dim, runs, cfg.rope);
    Tensor kr = b.rope(b.linear(h, k), at.kv_heads, at.head_dim, runs, cfg.rope);
    Tensor vr = b.linear(h, v);
    return b.linear(b.attend(runs, slot, qr, kr, vr, at), o);
  }
  Tensor query = b.linear(h, q);
  Tensor gate;
  if (cfg.output_gate) {
    gate = b.head_columns(query, at.heads, 2 * at.head_dim, at.head_dim, at.head_dim);
    query = b.head_columns(query, at.heads, 2 * at.head_dim, 0, at.head_dim);
  }
  Tensor key = b.linear(h, k);
  Tensor value = cfg.values_from_keys ? key : b.linear(h, v);
  if (cfg.value_norm) value = b.rms_norm_heads(value, v_norm, at.kv_heads, cfg.norm_eps);
  if (cfg.qk_norm) {
    query = b.rms_norm_heads(query, q_norm, at.heads, cfg.norm_eps);
    key = b.rms_norm_heads(key, k_norm, at.kv_heads, cfg.norm_eps);
  }
  if (cfg.use_rope) {
    query = b.rope(query, at.heads, at.head_dim, runs, cfg.rope);
    key = b.rope(key, at.kv_heads, at.head_dim, runs, cfg.rope);
  }
  Tensor out = b.attend(runs, slot, query, key, value, at);
  if (cfg.output_gate) out = b.sigmoid_gate(out, gate);
  return b.linear(out, o);
}

}  // namespace tf
