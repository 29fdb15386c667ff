#include "blocks/mamba2.h"

namespace tf {

Mamba2Block Mamba2Block::load(WeightSource& src, const std::string& prefix, const Mamba2Config& cfg) {
  Mamba2Block blk;
  blk.cfg = cfg;
  const auto& s = cfg.spec;
  const std::int64_t inner = s.inner(), C = s.conv_channels();
  blk.in_proj = src.matrix(prefix + "in_proj.weight", inner + C + s.heads, cfg.hidden);
  blk.conv = src.dense(prefix + "conv1d.weight", C, s.conv_kernel);
  if (src.has(prefix + "conv1d.bias")) blk.conv_bias = src.vector(prefix + "conv1d.bias", C);
  blk.a_log = src.vector(prefix + "A_log", s.heads);
  blk.dt_bias = src.vector(prefix + "dt_bias", s.heads);
  blk.d = src.vector(prefix + "D", s.heads);
  blk.norm = src.vector(prefix + "norm.weight", inner);
  blk.out = src.matrix(prefix + "out_proj.weight", cfg.hidden, inner);
  return blk;
}

Tensor Mamba2Block::forward(Backend& b, const Tensor& h, std::span<const StreamRows> runs, int slot) const {
  const auto& s = cfg.spec;
  const int inner = static_cast<int>(s.inner()), C = static_cast<int>(s.conv_channels());
  const int width = inner + C + s.heads;
  const Tensor proj = b.linear(h, in_proj);
  // Column slices of the one projection: head_columns over a single "head" of all its columns.
  const Tensor z = b.head_columns(proj, 1, width, 0, inner);
  const Tensor xbc = b.head_columns(proj, 1, width, inner, C);
  const Tensor dt = b.head_columns(proj, 1, width, inner + C, s.heads);
  const Tensor y = b.mamba2_scan(runs, slot, xbc, dt, conv, conv_bias, a_log, dt_bias, d, s);
  return b.linear(b.rms_norm_groups(b.swiglu(z, y), norm, s.groups, cfg.norm_eps), out);
}

}  // namespace tf
