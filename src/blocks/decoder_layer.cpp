#include "blocks/decoder_layer.h"

#include <type_traits>
#include <vector>

namespace tf {

Tensor DecoderLayer::forward(Backend& b, Tensor x, std::span<const StreamRows> runs, float eps) const {
  if (ngrams) x = ngrams->forward(b, x, runs);
  if (!std::holds_alternative<std::monostate>(mixer)) {
    std::vector<float> weights;
    const Tensor h = mixer_hc ? mixer_hc->enter(b, x, &weights) : b.rms_norm(x, input_norm, eps);
    const Tensor y = std::visit(
        [&](const auto& m) -> Tensor {
          if constexpr (std::is_same_v<std::decay_t<decltype(m)>, std::monostate>)
            return h;
          else
            return m.forward(b, h, runs, slot);
        },
        mixer);
    if (mixer_hc)
      x = mixer_hc->leave(b, x, y, weights);
    else
      x = b.add(x, post_mixer_norm.data ? b.rms_norm(y, post_mixer_norm, eps) : y);
  }
  if (!std::holds_alternative<std::monostate>(ffn)) {
    std::vector<float> weights;
    const Tensor h = ffn_hc ? ffn_hc->enter(b, x, &weights) : b.rms_norm(x, post_norm, eps);
    const Tensor y = std::visit(
        [&](const auto& f) -> Tensor {
          using F = std::decay_t<decltype(f)>;
          if constexpr (std::is_same_v<F, std::monostate>)
            return h;
          else if constexpr (std::is_same_v<F, MlpBesideExperts>)
            return f.forward(b, h, x);  // its experts read the stream itself
          else if constexpr (std::is_same_v<F, MoeBlock>) {
            if (!f.hashed()) return f.forward(b, h);
            std::vector<std::int32_t> tokens;  // the rows' tokens, the runs' in order
            for (const auto& run : runs) tokens.insert(tokens.end(), run.tokens.begin(), run.tokens.end());
            return f.forward(b, h, nullptr, tokens);
          } else
            return f.forward(b, h);
        },
        ffn);
    if (ffn_hc)
      x = ffn_hc->leave(b, x, y, weights);
    else
      x = b.add(x, post_ffn_norm.data ? b.rms_norm(y, post_ffn_norm, eps) : y);
  }
  return scalar != 1.0f ? b.scale(x, scalar) : x;
}

}  // namespace tf
