#include "blocks/mtp_head.h"

#include <algorithm>

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

std::vector<HostRowLayer> MtpHead::host_row_layers() const {
  std::vector<HostRowLayer> out;
  for (const auto& l : layers)
    if (const auto* m = std::get_if<MlaBlock>(&l.mixer)) {
      if (out.size() <= static_cast<std::size_t>(l.slot)) out.resize(static_cast<std::size_t>(l.slot) + 1);
      out[static_cast<std::size_t>(l.slot)] = {m->log_width()};
    }
  return out;
}

Tensor MtpHead::forward(Backend& b, const Tensor& embedded, const Tensor& hidden,
                        std::span<const StreamRows> runs) const {
  Tensor e = embedded;
  if (zero_first_embedding) {
    // Only a stream's first call holds position 0: one round trip through the host there, none after.
    std::int64_t row = 0, n = 0;
    std::vector<std::int64_t> first;
    for (const auto& run : runs) {
      if (run.start == 0 && run.rows > 0) first.push_back(row);
      row += run.rows;
    }
    n = row;
    if (!first.empty()) {
      std::vector<float> v = b.to_host(embedded);
      const std::size_t width = v.size() / static_cast<std::size_t>(n);
      for (const std::int64_t r : first)
        std::fill_n(v.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * width), width, 0.0f);
      e = b.from_host(v, n, static_cast<std::int64_t>(width));
    }
  }
  Tensor x = b.linear(b.concat_columns(b.rms_norm(e, norm_embedding, eps), b.rms_norm(hidden, norm_hidden, eps)), fc);
  for (const auto& l : layers) x = l.forward(b, x, runs, eps);
  return b.rms_norm(x, final_norm, eps);
}

}  // namespace tf
