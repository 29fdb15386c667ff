#include "blocks/gated_delta.h"

#include <cmath>

namespace tf {

GatedDeltaBlock GatedDeltaBlock::load(WeightSource& src, const std::string& prefix, const GatedDeltaConfig& cfg) {
  GatedDeltaBlock blk;
  blk.cfg = cfg;
  const auto& s = cfg.spec;
  const std::int64_t value_width = static_cast<std::int64_t>(s.v_heads) * s.v_dim;
  // Tensor parallelism: each rank holds a part of the key heads and of the value heads (consecutive, so that
  // value heads stay with their key head), of q, k and v alike in the fused projection and its conv, and sums
  // its part of out_proj's product.
  const std::int64_t key_width = static_cast<std::int64_t>(s.k_heads) * s.k_dim;
  const WeightSplit qkv_parts =
      WeightSplit::outputs({{key_width, s.k_dim}, {key_width, s.k_dim}, {value_width, s.v_dim}});
  blk.in_qkv = src.matrix(prefix + "in_proj_qkv.weight", s.conv_channels(), cfg.hidden, qkv_parts);
  blk.in_z = src.matrix(prefix + "in_proj_z.weight", value_width, cfg.hidden, WeightSplit::outputs(s.v_dim));
  blk.in_b = src.matrix(prefix + "in_proj_b.weight", s.v_heads, cfg.hidden, WeightSplit::outputs());
  blk.in_a = src.matrix(prefix + "in_proj_a.weight", s.v_heads, cfg.hidden, WeightSplit::outputs());
  blk.conv = src.dense(prefix + "conv1d.weight", s.conv_channels(), s.conv_kernel, qkv_parts);
  if (cfg.stored_a) {
    // log(-A) is A_log again to within a rounding of float32's exp (torch's, at conversion), and the kernels
    // take A_log; A must be negative for the decay to lie in (0, 1).
    auto a = src.floats(prefix + "A_log", s.v_heads);
    for (float& v : a) {
      if (!(v < 0.0f))
        src.fail("tensor '" + prefix + "A_log' (A = -exp(A_log)) holds " + std::to_string(v) +
                 ", not a negative decay rate");
      v = std::log(-v);
    }
    blk.a_log = src.values(prefix + "A_log", a, WeightSplit::outputs());
  } else {
    blk.a_log = src.vector(prefix + "A_log", s.v_heads, false, WeightSplit::outputs());
  }
  blk.dt_bias = src.vector(prefix + "dt_bias", s.v_heads, false, WeightSplit::outputs());
  blk.norm = src.vector(prefix + "norm.weight", s.v_dim);  // a plain multiplier, not zero-centred
  blk.out = src.matrix(prefix + "out_proj.weight", cfg.hidden, value_width, WeightSplit::inputs());
  return blk;
}

Tensor GatedDeltaBlock::forward(Backend& b, const Tensor& h, std::span<const StreamRows> runs, int slot) const {
  const Tensor qkv = b.linear(h, in_qkv);
  const Tensor z = b.linear(h, in_z);
  const Tensor beta_in = b.linear(h, in_b);
  const Tensor decay_in = b.linear(h, in_a);
  const Tensor core = b.gated_delta(runs, slot, qkv, decay_in, beta_in, conv, a_log, dt_bias, cfg.spec);
  if (cfg.sigmoid_output_gate)
    return b.linear(b.sigmoid_gate(b.rms_norm_heads(core, norm, cfg.spec.v_heads, cfg.norm_eps), z), out);
  return b.linear(b.rms_norm_gated(core, norm, z, cfg.spec.v_heads, cfg.norm_eps), out);
}

}  // namespace tf
