#pragma once
// Causal self-attention over the stream's KV cache, in the variants the families use: plain GQA with RoPE
// (llama), GQA without RoPE (Nemotron-H), and Qwen3.5's gated attention: q/k RMSNorm per head before RoPE, partial
// RoPE, and an output gate (q_proj yields [query | gate] per head; the output is attention * sigmoid(gate)).
#include <cstdint>
#include <span>
#include <string>

#include "backends/backend.h"
#include "blocks/weight_source.h"

namespace tf {

struct AttentionConfig {
  std::int64_t hidden = 0;
  AttentionSpec spec;  // heads, kv_heads, head_dim, scale
  RopeSpec rope;
  bool use_rope = true;               // false: positions only through the causal mask (Nemotron-H's attention layers)
  bool qk_norm = false;               // q_norm / k_norm over each head
  bool zero_centred_qk_norm = false;  // stored as w, applied as 1 + w
  bool output_gate = false;           // q_proj has 2 * head_dim per head: query, then gate
  bool values_from_keys = false;      // no v_proj: values are k_proj's output, before k_norm and RoPE (Gemma 4)
  bool value_norm = false;            // values RMS-normed over each head, without a weight (Gemma 4)
  float norm_eps = 1e-6f;
  // spec.window > 0: sliding-window attention over the stream's window store (StreamRows::window_cache).
};

// Attention over `heads` query and `kv_heads` key/value heads of `head_dim`, scaled by 1/sqrt(head_dim).
AttentionSpec attention_spec(std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim);

struct AttentionBlock {
  AttentionConfig cfg;
  DeviceWeight q, k, v, o, q_norm, k_norm, v_norm;

  // Weights `prefix` + q_proj, k_proj, v_proj, o_proj (+ q_norm, k_norm).
  static AttentionBlock load(WeightSource& src, const std::string& prefix, const AttentionConfig& cfg);
  // h [n, hidden] -> [n, hidden]; keys and values go to layer `slot` of each run's cache.
  Tensor forward(Backend& b, const Tensor& h, std::span<const StreamRows> runs, int slot) const;
};

}  // namespace tf
