#include "blocks/mtp_head.h"

namespace tf {

void MtpHead::load_fusion(WeightSource& src, const std::string& norm_embedding_name,
                          const std::string& norm_hidden_name, const std::string& fc_name, std::int64_t hidden,
                          bool norms_plus_one) {
  norm_embedding = src.vector(norm_embedding_name, hidden, norms_plus_one);
  norm_hidden = src.vector(norm_hidden_name, hidden, norms_plus_one);
  fc = src.matrix(fc_name, hidden, 2 * hidden);
}

int MtpHead::attention_layers() const {
  int n = 0;
  for (const auto& l : layers) n += l.attention() ? 1 : 0;
  return n;
}

AttentionSpec MtpHead::kv_shape() const {
  for (const auto& l : layers)
    if (const auto* a = std::get_if<AttentionBlock>(&l.mixer)) return a->cfg.spec;
  return {};
}

Tensor MtpHead::forward(Backend& b, const Tensor& embedded, const Tensor& hidden,
                        std::span<const StreamRows> runs) const {
  Tensor x =
      b.linear(b.concat_columns(b.rms_norm(embedded, norm_embedding, eps), b.rms_norm(hidden, norm_hidden, eps)), fc);
  for (const auto& l : layers) x = l.forward(b, x, runs, eps);
  return b.rms_norm(x, final_norm, eps);
}

}  // namespace tf
