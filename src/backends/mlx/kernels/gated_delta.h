#pragma once
// The Gated DeltaNet recurrence of one stream on the CPU (Qwen3-Next / Qwen3.5 linear-attention layers),
// one position after another. A position's arithmetic depends only on its inputs and the state before it,
// never on how many positions share the call, so prefill, decode and verify rows give the same bits, and a
// rolled-back window replays to exactly the state serial decoding reaches.
#include <cstdint>

namespace tf {

struct GatedDeltaShape {
  int k_heads = 0, v_heads = 0, k_dim = 0, v_dim = 0, conv_kernel = 4;
  bool tiled_value_heads = false;  // value head h reads key head h % k_heads, else h / (v_heads / k_heads)
  // Kimi delta attention: a decay per key channel (a and dt_bias [v_heads * k_dim]) instead of per value head,
  // bounded below by decay_lower_bound where it is negative (GatedDeltaSpec says how).
  bool channel_decay = false;
  float decay_lower_bound = 0.0f;
  std::int64_t channels() const { return 2LL * k_heads * k_dim + static_cast<std::int64_t>(v_heads) * v_dim; }
  std::int64_t conv_floats() const { return static_cast<std::int64_t>(conv_kernel - 1) * channels(); }
  std::int64_t state_floats() const { return static_cast<std::int64_t>(v_heads) * k_dim * v_dim; }
};

// Per-layer weights, float32: conv [channels, conv_kernel], a_log [v_heads], dt_bias [v_heads] (with
// channel_decay [v_heads * k_dim]).
struct GatedDeltaWeights {
  const float* conv = nullptr;
  const float* a_log = nullptr;
  const float* dt_bias = nullptr;
};

// Runs `rows` positions: qkv [rows, channels] (before the conv), a [rows, v_heads] (with channel_decay [rows,
// v_heads * k_dim]) and b [rows, v_heads]; out [rows,
// v_heads * v_dim]. The state before the first row is read from conv_in [conv_kernel - 1, channels] (oldest
// input first) and state_in [v_heads, k_dim, v_dim]; the state after the last row is left in conv_out and
// state_out, which may be the same buffers as the inputs (in place) or others (the inputs kept intact).
void gated_delta_rows(const float* qkv, const float* a, const float* b, std::int64_t rows, const GatedDeltaWeights& w,
                      const GatedDeltaShape& shape, const float* conv_in, const float* state_in, float* conv_out,
                      float* state_out, float* out);

}  // namespace tf
