#include "families/model.h"

#include <stdexcept>

namespace tf {

std::vector<ForwardResult> Model::forward_parts(std::span<const ForwardPart> parts) {
  std::vector<ForwardResult> out(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& p = parts[i];
    const auto rows = static_cast<std::int64_t>(p.tokens.size());
    if (p.hidden) {
      if (p.greedy_ids) throw std::invalid_argument("forward_parts: hidden rows come with logits, not greedy ids");
      out[i].logits = forward_hidden(*p.state, p.tokens, rows, out[i].hidden);
    } else if (p.greedy_ids) {
      out[i].ids = forward_greedy(*p.state, p.tokens, rows);
    } else {
      out[i].logits = forward(*p.state, p.tokens, rows);
    }
  }
  return out;
}

}  // namespace tf
