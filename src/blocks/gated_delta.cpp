#include "blocks/gated_delta.h"

namespace tf {

GatedDeltaBlock GatedDeltaBlock::load(WeightSource& src, const std::string& prefix, const GatedDeltaConfig& cfg) {
  GatedDeltaBlock blk;
  blk.cfg = cfg;
  const auto& s = cfg.spec;
  const std::int64_t value_width = static_cast<std::int64_t>(s.v_heads) * s.v_dim;
  blk.in_qkv = src.matrix(prefix + "in_proj_qkv.weight", s.conv_channels(), cfg.hidden);
  blk.in_z = src.matrix(prefix + "in_proj_z.weight", value_width, cfg.hidden);
  blk.in_b = src.matrix(prefix + "in_proj_b.weight", s.v_heads, cfg.hidden);
  blk.in_a = src.matrix(prefix + "in_proj_a.weight", s.v_heads, cfg.hidden);
  blk.conv = src.dense(prefix + "conv1d.weight", s.conv_channels(), s.conv_kernel);
  blk.a_log = src.vector(prefix + "A_log", s.v_heads);
  blk.dt_bias = src.vector(prefix + "dt_bias", s.v_heads);
  blk.norm = src.vector(prefix + "norm.weight", s.v_dim);  // a plain multiplier, not zero-centred
  blk.out = src.matrix(prefix + "out_proj.weight", cfg.hidden, value_width);
  return blk;
}

Tensor GatedDeltaBlock::forward(Backend& b, const Tensor& h, std::span<const StreamRows> runs, int slot) const {
  const Tensor qkv = b.linear(h, in_qkv);
  const Tensor z = b.linear(h, in_z);
  const Tensor beta_in = b.linear(h, in_b);
  const Tensor decay_in = b.linear(h, in_a);
  const Tensor core = b.gated_delta(runs, slot, qkv, decay_in, beta_in, conv, a_log, dt_bias, cfg.spec);
  return b.linear(b.rms_norm_gated(core, norm, z, cfg.spec.v_heads, cfg.norm_eps), out);
}

}  // namespace tf
