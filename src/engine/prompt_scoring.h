#pragma once
// Prompt scoring (completions' echo with logprobs): the log-probability of each prompt token under the row
// before it, from the logits rows prefill computed for a chunk.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/sampler.h"

namespace tf {

// `rows` holds [chunk rows, vocab] logits of the prompt positions first, first + 1, ...; row i predicts the
// token at first + i + 1, so the chunk ending the prompt scores one token fewer than it has rows. Each record
// is token_logprob at temperature 0 (the log-softmax of the whole row at temperature 1: the model's raw
// distribution) with `top` alternatives; appended to `out` in position order.
void score_prompt_rows(std::span<const float> rows, std::size_t vocab, std::span<const std::int32_t> prompt,
                       std::int64_t first, int top, std::vector<TokenLogprob>& out);

// The bytes a prompt-scoring request holds besides a plain one: one chunk's every-row logits, once on the
// backend and once on the host.
std::size_t prompt_scoring_bytes(std::int64_t chunk_rows, std::int64_t vocab);

}  // namespace tf
