#include "blocks/decoder_layer.h"

#include <type_traits>

namespace tf {

Tensor DecoderLayer::forward(Backend& b, Tensor x, std::span<const StreamRows> runs, float eps) const {
  if (!std::holds_alternative<std::monostate>(mixer)) {
    const Tensor h = b.rms_norm(x, input_norm, eps);
    const Tensor y = std::visit(
        [&](const auto& m) -> Tensor {
          if constexpr (std::is_same_v<std::decay_t<decltype(m)>, std::monostate>)
            return h;
          else
            return m.forward(b, h, runs, slot);
        },
        mixer);
    x = b.add(x, post_mixer_norm.data ? b.rms_norm(y, post_mixer_norm, eps) : y);
  }
  if (!std::holds_alternative<std::monostate>(ffn)) {
    const Tensor h = b.rms_norm(x, post_norm, eps);
    const Tensor y = std::visit(
        [&](const auto& f) -> Tensor {
          using F = std::decay_t<decltype(f)>;
          if constexpr (std::is_same_v<F, std::monostate>)
            return h;
          else if constexpr (std::is_same_v<F, MlpBesideExperts>)
            return f.forward(b, h, x);  // its experts read the stream itself
          else
            return f.forward(b, h);
        },
        ffn);
    x = b.add(x, post_ffn_norm.data ? b.rms_norm(y, post_ffn_norm, eps) : y);
  }
  return scalar != 1.0f ? b.scale(x, scalar) : x;
}

}  // namespace tf
