#include "blocks/mtp_head.h"

namespace tf {

bool MtpHead::present(const WeightSource& src, const std::string& prefix) { return src.has(prefix + "fc.weight"); }

MtpHead MtpHead::load(WeightSource& src, const std::string& prefix, const MtpHeadConfig& cfg) {
  const std::int64_t hidden = cfg.attention.hidden;
  const bool p1 = cfg.norms_plus_one;
  MtpHead m;
  m.eps = cfg.eps;
  m.norm_embedding = src.vector(prefix + "pre_fc_norm_embedding.weight", hidden, p1);
  m.norm_hidden = src.vector(prefix + "pre_fc_norm_hidden.weight", hidden, p1);
  m.fc = src.matrix(prefix + "fc.weight", hidden, 2 * hidden);
  const std::string layer = prefix + "layers.0.";
  m.input_norm = src.vector(layer + "input_layernorm.weight", hidden, p1);
  m.attention = AttentionBlock::load(src, layer + "self_attn.", cfg.attention);
  m.post_norm = src.vector(layer + "post_attention_layernorm.weight", hidden, p1);
  m.mlp = SwiGluMlp::load(src, layer + "mlp.", hidden, cfg.ffn);
  m.final_norm = src.vector(prefix + "norm.weight", hidden, p1);
  return m;
}

Tensor MtpHead::forward(Backend& b, const Tensor& embedded, const Tensor& hidden, std::span<const StreamRows> runs,
                        int slot) const {
  Tensor x =
      b.linear(b.concat_columns(b.rms_norm(embedded, norm_embedding, eps), b.rms_norm(hidden, norm_hidden, eps)), fc);
  x = b.add(x, attention.forward(b, b.rms_norm(x, input_norm, eps), runs, slot));
  x = b.add(x, mlp.forward(b, b.rms_norm(x, post_norm, eps)));
  return b.rms_norm(x, final_norm, eps);
}

}  // namespace tf
