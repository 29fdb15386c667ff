#include "blocks/decoder_layer.h"

#include <type_traits>

namespace tf {

Tensor DecoderLayer::forward(Backend& b, Tensor x, std::span<const StreamRows> runs, float eps) const {
  if (!std::holds_alternative<std::monostate>(mixer)) {
    const Tensor h = b.rms_norm(x, input_norm, eps);
    x = b.add(x, std::visit(
                     [&](const auto& m) -> Tensor {
                       if constexpr (std::is_same_v<std::decay_t<decltype(m)>, std::monostate>)
                         return h;
                       else
                         return m.forward(b, h, runs, slot);
                     },
                     mixer));
  }
  if (!std::holds_alternative<std::monostate>(ffn)) {
    const Tensor h = b.rms_norm(x, post_norm, eps);
    x = b.add(x, std::visit(
                     [&](const auto& f) -> Tensor {
                       if constexpr (std::is_same_v<std::decay_t<decltype(f)>, std::monostate>)
                         return h;
                       else
                         return f.forward(b, h);
                     },
                     ffn));
  }
  return x;
}

}  // namespace tf
