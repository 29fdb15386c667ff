#include "engine/prompt_scoring.h"

#include <algorithm>
#include <stdexcept>

namespace tf {

void score_prompt_rows(std::span<const float> rows, std::size_t vocab, std::span<const std::int32_t> prompt,
                       std::int64_t first, int top, std::vector<TokenLogprob>& out) {
  if (vocab == 0 || rows.size() % vocab != 0) throw std::invalid_argument("score_prompt_rows: rows are not whole");
  const auto n = static_cast<std::int64_t>(prompt.size());
  const auto count = static_cast<std::int64_t>(rows.size() / vocab);
  SamplingParams raw;
  raw.temperature = 0.0f;  // token_logprob's temperature-0 distribution: the whole row at temperature 1
  for (std::int64_t i = 0; i < count && first + i + 1 < n; ++i) {
    const auto row = rows.subspan(static_cast<std::size_t>(i) * vocab, vocab);
    out.push_back(token_logprob(row, raw, prompt[static_cast<std::size_t>(first + i + 1)], std::max(top, 0)));
  }
}

std::size_t prompt_scoring_bytes(std::int64_t chunk_rows, std::int64_t vocab) {
  return 2 * static_cast<std::size_t>(std::max<std::int64_t>(chunk_rows, 0)) *
         static_cast<std::size_t>(std::max<std::int64_t>(vocab, 0)) * sizeof(float);
}

}  // namespace tf
