#include "blocks/kda.h"

namespace tf {

GatedDeltaSpec KdaConfig::spec() const {
  GatedDeltaSpec s;
  s.k_heads = s.v_heads = heads;
  s.k_dim = s.v_dim = head_dim;
  s.conv_kernel = conv_kernel;
  s.channel_decay = true;
  s.decay_lower_bound = lower_bound;
  return s;
}

KdaBlock KdaBlock::load(WeightSource& src, const std::string& prefix, const KdaConfig& cfg) {
  KdaBlock k;
  k.cfg = cfg;
  const std::int64_t width = static_cast<std::int64_t>(cfg.heads) * cfg.head_dim;
  k.q = src.matrix(prefix + "q_proj.weight", width, cfg.hidden);
  k.k = src.matrix(prefix + "k_proj.weight", width, cfg.hidden);
  k.v = src.matrix(prefix + "v_proj.weight", width, cfg.hidden);
  k.conv = src.dense(prefix + "conv1d.weight", 3 * width, cfg.conv_kernel);
  k.f_a = src.matrix(prefix + "forget_gate.f_a_proj.weight", cfg.head_dim, cfg.hidden);
  k.f_b = src.matrix(prefix + "forget_gate.f_b_proj.weight", width, cfg.head_dim);
  k.dt_bias = src.vector(prefix + "forget_gate.dt_bias", width);
  k.a_log = src.vector(prefix + "forget_gate.A_log", cfg.heads);
  k.b = src.matrix(prefix + "b_proj.weight", cfg.heads, cfg.hidden);
  k.g_a = src.matrix(prefix + "g_a_proj.weight", cfg.head_dim, cfg.hidden);
  k.g_b = src.matrix(prefix + "g_b_proj.weight", width, cfg.head_dim);
  k.o_norm = src.vector(prefix + "o_norm.weight", cfg.head_dim);  // a plain multiplier
  k.o = src.matrix(prefix + "o_proj.weight", cfg.hidden, width);
  return k;
}

Tensor KdaBlock::forward(Backend& be, const Tensor& h, std::span<const StreamRows> runs, int slot) const {
  const Tensor qkv = be.concat_columns(be.concat_columns(be.linear(h, q), be.linear(h, k)), be.linear(h, v));
  const Tensor forget = be.linear(be.linear(h, f_a), f_b);
  const Tensor beta_in = be.linear(h, b);
  const Tensor core = be.gated_delta(runs, slot, qkv, forget, beta_in, conv, a_log, dt_bias, cfg.spec());
  const Tensor gate = be.linear(be.linear(h, g_a), g_b);
  return be.linear(be.sigmoid_gate(be.rms_norm_heads(core, o_norm, cfg.heads, cfg.norm_eps), gate), o);
}

}  // namespace tf
