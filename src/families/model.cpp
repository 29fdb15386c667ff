#include "families/model.h"

#include <stdexcept>

namespace tf {

std::vector<float> Model::forward_scored(SequenceState& state, std::span<const std::int32_t> tokens,
                                         std::vector<float>& every_row, std::vector<float>* hidden) {
  const auto rows = static_cast<std::int64_t>(tokens.size());
  every_row = hidden != nullptr ? forward_hidden(state, tokens, rows, *hidden) : forward(state, tokens, rows);
  const auto vocab = static_cast<std::size_t>(info().vocab);
  if (every_row.size() < vocab) throw std::logic_error("forward_scored: the forward returned no row");
  return std::vector<float>(every_row.end() - static_cast<std::ptrdiff_t>(vocab), every_row.end());
}

std::vector<ForwardResult> Model::forward_parts(std::span<const ForwardPart> parts) {
  std::vector<ForwardResult> out(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& p = parts[i];
    const auto rows = static_cast<std::int64_t>(p.tokens.size());
    if (p.hidden) {
      if (p.ids) throw std::invalid_argument("forward_parts: hidden rows come with logits, not token ids");
      out[i].logits = forward_hidden(*p.state, p.tokens, rows, out[i].hidden);
    } else if (p.ids && p.choice.temperature <= 0.0f) {
      out[i].ids = forward_greedy(*p.state, p.tokens, rows);
    } else if (p.ids) {
      TokenChoice c = p.choice;
      c.position = p.state->length() + 1;  // the first row's token: after the last token this forward runs
      c.position += rows > 0 ? static_cast<std::int64_t>(p.tokens.size()) - rows : 0;
      out[i].ids = forward_sampled(*p.state, p.tokens, rows, c);
    } else {
      out[i].logits = forward(*p.state, p.tokens, rows);
    }
  }
  return out;
}

}  // namespace tf
