#include "families/model.h"

namespace tf {

std::vector<ForwardResult> Model::forward_parts(std::span<const ForwardPart> parts) {
  std::vector<ForwardResult> out(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& p = parts[i];
    const auto rows = static_cast<std::int64_t>(p.tokens.size());
    if (p.greedy_ids) out[i].ids = forward_greedy(*p.state, p.tokens, rows);
    else out[i].logits = forward(*p.state, p.tokens, rows);
  }
  return out;
}

}  // namespace tf
